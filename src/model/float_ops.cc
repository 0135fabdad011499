#include "model/float_ops.h"

#include <cmath>

namespace mpcache::model {

void RmsNorm(float* o, const float* x, const float* w, std::size_t n, float eps) {
  float ss = 0.0f;
  for (std::size_t j = 0; j < n; ++j) ss += x[j] * x[j];
  ss /= static_cast<float>(n);
  ss += eps;
  ss = 1.0f / std::sqrt(ss);
  for (std::size_t j = 0; j < n; ++j) o[j] = w[j] * (ss * x[j]);
}

void Softmax(float* x, std::size_t n) {
  if (n == 0) return;
  float max_val = x[0];
  for (std::size_t i = 1; i < n; ++i) {
    if (x[i] > max_val) max_val = x[i];
  }
  float sum = 0.0f;
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - max_val);
    sum += x[i];
  }
  for (std::size_t i = 0; i < n; ++i) x[i] /= sum;
}

float Dot(const float* a, const float* b, std::size_t n) {
  constexpr std::size_t kLanes = 8;
  float acc[kLanes] = {};
  std::size_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    for (std::size_t k = 0; k < kLanes; ++k) acc[k] += a[j + k] * b[j + k];
  }
  float sum = 0.0f;
  for (; j < n; ++j) sum += a[j] * b[j];
  for (std::size_t k = 0; k < kLanes; ++k) sum += acc[k];
  return sum;
}

void MatMul(float* out, const float* x, const float* w, std::size_t n, std::size_t d) {
  for (std::size_t i = 0; i < d; ++i) out[i] = Dot(w + i * n, x, n);
}

void RopeTables(int pos, int head_size, float theta, float* cos_out, float* sin_out) {
  for (int i = 0; i < head_size; i += 2) {
    const float freq =
        1.0f / std::pow(theta, static_cast<float>(i) / static_cast<float>(head_size));
    const float val = static_cast<float>(pos) * freq;
    cos_out[i / 2] = std::cos(val);
    sin_out[i / 2] = std::sin(val);
  }
}

void ApplyRope(float* x, std::size_t n, int head_size, const float* cos_t, const float* sin_t) {
  const std::size_t hs = static_cast<std::size_t>(head_size);
  for (std::size_t i = 0; i < n; i += 2) {
    const std::size_t p = (i % hs) / 2;
    const float v0 = x[i], v1 = x[i + 1];
    x[i] = v0 * cos_t[p] - v1 * sin_t[p];
    x[i + 1] = v0 * sin_t[p] + v1 * cos_t[p];
  }
}

void SwiGlu(float* h1, const float* h3, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    float val = h1[i];
    val *= 1.0f / (1.0f + std::exp(-val));
    h1[i] = val * h3[i];
  }
}

}  // namespace mpcache::model
