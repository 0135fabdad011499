// Products of compact matrices (model/compact_model.h) with vectors of ring elements, exact:
// W's integers (value x 2^24) times x, modulo 2^64 (plaintext, semi-honest shares) or 2^128
// (SPDZ2k value and MAC shares, both in ONE pass over W). The secure engine runs them on
// shares, the fixed-point engine on clear values: the same integers.
//
// Q8_0, vectorised (AVX2; a portable scalar path otherwise): x is cut into balanced base-2^16
// digits (4 planes for a 64-bit word, 16 for a value and a MAC of 128 bits), so a block's
// sum_j q_j x_j is int16 x int16 multiply-adds (vpmaddwd) per plane, exact in 32 bits; the
// block's scale S (an integer, |S| < 2^31) multiplies the four planes' partial sums into
// 64-bit lanes. Those lanes are exact when max|S| x 2^26 x blocks_per_row < 2^62, which
// holds for any trained or synthetic model (|d| < 2^7 / blocks); a matrix outside it takes
// the scalar path, which is exact for every input. F16 is scalar.
// VecMat (the secret one-hot embedding lookup x W): each row's x_i S[i, b] is cut into
// digits and two rows' int8 weights are multiplied against them (vpmaddwd), accumulated in
// 32 bits for 128 row pairs, then in 64 bits — exact for every input.
// Work is split over `threads` (rows for MatVec, column blocks for VecMat).
#pragma once

#include <cstdint>

#include "model/compact_model.h"

namespace mpcache::model {

using u128 = unsigned __int128;

enum class KernelPath : std::uint8_t {
  kAuto,    // vectorised where compiled in and exact for the matrix, scalar otherwise
  kScalar,  // the portable reference (tests compare the two)
};

struct KernelOptions {
  int threads = 1;
  KernelPath path = KernelPath::kAuto;
};

// Whether this build has the vectorised kernels (AVX2).
bool CompactKernelsVectorised();
// Whether MatVec on `w` takes the vectorised path under kAuto.
bool MatVecVectorised(const CompactMatrix& w);

// y[i] = sum_j W[i, j] x[j] mod 2^64 (x: w.cols entries, y: w.rows).
void CompactMatVec(const CompactMatrix& w, const std::uint64_t* x, std::uint64_t* y,
                   const KernelOptions& options = {});
// Mod 2^128, two vectors in one pass: ya = W xa, yb = W xb.
void CompactMatVec2(const CompactMatrix& w, const u128* xa, const u128* xb, u128* ya, u128* yb,
                    const KernelOptions& options = {});
// y[j] = sum_i x[i] W[i, j] mod 2^64 (x: w.rows entries, y: w.cols).
void CompactVecMat(const CompactMatrix& w, const std::uint64_t* x, std::uint64_t* y,
                   const KernelOptions& options = {});
// Mod 2^128, two vectors in one pass.
void CompactVecMat2(const CompactMatrix& w, const u128* xa, const u128* xb, u128* ya, u128* yb,
                    const KernelOptions& options = {});

}  // namespace mpcache::model
