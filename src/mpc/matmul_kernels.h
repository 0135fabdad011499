// Local kernels of the matrix products (mpc/matmul.cc, mpc/fixed_batch.cc): products of
// shares with public matrices, accumulated in place, value and MAC shares alike. Internal
// to src/mpc.
#pragma once

#include <cstdint>
#include <vector>

#include "mpc/parallel.h"
#include "mpc/share.h"

namespace mpcache::mpc::kernels {

// out (m x n) += L (m x k) * R (k x n), for element types where L[i] * R[j] accumulates
// into Out (u64 x u64 -> u64, u64 x u128 -> u128, u128 x u64 -> u128). Columns are split
// over threads when n is wide (the 1 x k . k x n case), rows otherwise.
template <typename Out, typename L, typename R>
void AccumulateProduct(int threads, Out* out, const L* l, const R* r, std::size_t m, std::size_t k,
                       std::size_t n) {
  auto cols = [&](std::size_t j0, std::size_t j1) {
    for (std::size_t i = 0; i < m; ++i) {
      Out* o = out + i * n;
      for (std::size_t t = 0; t < k; ++t) {
        const L a = l[i * k + t];
        const R* row = r + t * n;
        for (std::size_t j = j0; j < j1; ++j) o[j] += a * row[j];
      }
    }
  };
  if (n >= 256 || m == 1) {
    ParallelFor(threads, n, cols);
  } else {
    ParallelFor(threads, m, [&](std::size_t i0, std::size_t i1) {
      for (std::size_t i = i0; i < i1; ++i) {
        Out* o = out + i * n;
        for (std::size_t t = 0; t < k; ++t) {
          const L a = l[i * k + t];
          const R* row = r + t * n;
          for (std::size_t j = 0; j < n; ++j) o[j] += a * row[j];
        }
      }
    });
  }
}

// out += public (m x k) * shares (k x n)
template <typename P>
void AddPublicTimesShares(int threads, Shares<P>& out, const std::uint64_t* w, const Shares<P>& x,
                          std::size_t m, std::size_t k, std::size_t n) {
  AccumulateProduct(threads, out.v.data(), w, x.v.data(), m, k, n);
  if constexpr (P::kMalicious) AccumulateProduct(threads, out.m.data(), w, x.m.data(), m, k, n);
}

// out += shares (m x k) * public (k x n)
template <typename P>
void AddSharesTimesPublic(int threads, Shares<P>& out, const Shares<P>& x, const std::uint64_t* w,
                          std::size_t m, std::size_t k, std::size_t n) {
  AccumulateProduct(threads, out.v.data(), x.v.data(), w, m, k, n);
  if constexpr (P::kMalicious) AccumulateProduct(threads, out.m.data(), x.m.data(), w, m, k, n);
}

}  // namespace mpcache::mpc::kernels
