// Matrix products (row-major matrices; shapes in the comments: x is m x k, W is k x n).
//
// Secret x public: local, no communication (values and MAC shares alike).
// Secret x secret with a FIXED MASK: an operand X reused across products (a cached K/V
// block, a private weight matrix) is masked once with a dealer matrix [A]: MaskFixed opens
// D = X - A (1 round, rows*cols*8 bytes to each peer) and keeps D and [X]. Each later
// product with a fresh operand Y uses a dealer matrix triple bound to A and opens only
// E = Y - B:
//   fixed right (x: m x k, W: k x n):  xW = E[W] + [B]D + [BA]   (opens m*k values)
//   fixed left  (X: m x k, y: k x n):  Xy = [X]E + D[B] + [AB]   (opens k*n values)
// Cost per product: 1 round, OpenBytes<P>() bytes x (fresh operand size) to each of the 2
// peers — for 1x4096 . 4096x4096 that is 2 x 64 KiB per party in malicious mode. A one-off
// MatMul(x, y) opens both masked operands in the same single round. Many maskings or
// products in one round: mpc/fixed_batch.h (these are its one-element cases).
// Local work is split over ContextOptions::threads workers.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "mpc/context.h"

namespace mpcache::mpc {

template <typename P>
struct FixedOperand {
  std::uint64_t mask_id = 0;
  std::size_t rows = 0, cols = 0;
  std::vector<std::uint64_t> d;  // D = X - A, public (rows x cols)
  Shares<P> x;                   // [X]
};

// x (m x k) times public W (k x n).
template <typename P>
Shares<P> MatMulPublicRight(const Context<P>& ctx, const Shares<P>& x, std::size_t m, std::size_t k,
                            std::span<const std::uint64_t> w, std::size_t n);
// Public W (m x k) times x (k x n).
template <typename P>
Shares<P> MatMulPublicLeft(const Context<P>& ctx, std::span<const std::uint64_t> w, std::size_t m,
                           std::size_t k, const Shares<P>& x, std::size_t n);

// Mask X (rows x cols) once: opens D = X - A. Takes ownership of X's shares.
template <typename P>
Result<FixedOperand<P>> MaskFixed(Context<P>& ctx, Shares<P> x, std::size_t rows, std::size_t cols);

// x (m x w.rows) times the fixed W (w.rows x w.cols).
template <typename P>
Result<Shares<P>> MatMul(Context<P>& ctx, const Shares<P>& x, std::size_t m,
                         const FixedOperand<P>& w);
// The fixed X (x.rows x x.cols) times y (x.cols x n).
template <typename P>
Result<Shares<P>> MatMul(Context<P>& ctx, const FixedOperand<P>& x, const Shares<P>& y,
                         std::size_t n);
// One-off secret x secret: x (m x k) times y (k x n), one round.
template <typename P>
Result<Shares<P>> MatMul(Context<P>& ctx, const Shares<P>& x, const Shares<P>& y, std::size_t m,
                         std::size_t k, std::size_t n);

}  // namespace mpcache::mpc
