// The float32 building blocks of the Llama-2 forward pass, exactly as llama2.c's run.c
// computes them. Exposed so the fixed-point simulation and the secure engine's tests can
// compare against the same reference arithmetic step by step.
#pragma once

#include <cstddef>

namespace mpcache::model {

// o[j] = w[j] * (x[j] / sqrt(mean(x^2) + eps)); o may alias x.
void RmsNorm(float* o, const float* x, const float* w, std::size_t n, float eps);

// In place: x <- exp(x - max) / sum.
void Softmax(float* x, std::size_t n);

// out[i] = sum_j w[i*n + j] * x[j] for i < d   (w is d x n, row-major).
// Summation uses 8 interleaved partial sums (vectorisable); out must not alias x.
void MatMul(float* out, const float* x, const float* w, std::size_t n, std::size_t d);

// Dot product with the same summation order as MatMul.
float Dot(const float* a, const float* b, std::size_t n);

// RoPE rotation tables for one position: cos/sin of pos * theta^(-2i/head_size) for
// i < head_size/2 (computed in float as run.c does).
void RopeTables(int pos, int head_size, float theta, float* cos_out, float* sin_out);

// Rotates interleaved pairs (x[2i], x[2i+1]) of each head of `x` (n values, n a multiple of
// head_size) by the tables from RopeTables.
void ApplyRope(float* x, std::size_t n, int head_size, const float* cos_t, const float* sin_t);

// SwiGLU in place: h1[i] = silu(h1[i]) * h3[i].
void SwiGlu(float* h1, const float* h3, std::size_t n);

}  // namespace mpcache::model
