#include "mpc/matmul.h"

#include <string>

#include "mpc/parallel.h"

namespace mpcache::mpc {
namespace {

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

// out += public D (m x k) * public E (k x n), added as a public constant.
template <typename P>
void AddPublicProduct(const ShareKey& key, Shares<P>& out, const std::uint64_t* d,
                      const std::uint64_t* e, std::size_t m, std::size_t k, std::size_t n,
                      int threads) {
  std::vector<std::uint64_t> de(m * n);
  AccumulateProduct(threads, de.data(), d, e, m, k, n);
  AddPublicInPlace<P>(key, out, de);
}

Status CheckSize(std::size_t got, std::size_t want, const char* what) {
  if (got != want) {
    return InvalidArgument(std::string(what) + " has " + std::to_string(got) +
                           " elements, the shape needs " + std::to_string(want));
  }
  return Status::Ok();
}

}  // namespace

template <typename P>
Shares<P> MatMulPublicRight(const Context<P>& ctx, const Shares<P>& x, std::size_t m, std::size_t k,
                            std::span<const std::uint64_t> w, std::size_t n) {
  Shares<P> out(m * n);
  AddSharesTimesPublic(ctx.options().threads, out, x, w.data(), m, k, n);
  return out;
}

template <typename P>
Shares<P> MatMulPublicLeft(const Context<P>& ctx, std::span<const std::uint64_t> w, std::size_t m,
                           std::size_t k, const Shares<P>& x, std::size_t n) {
  Shares<P> out(m * n);
  AddPublicTimesShares(ctx.options().threads, out, w.data(), x, m, k, n);
  return out;
}

template <typename P>
Result<FixedOperand<P>> MaskFixed(Context<P>& ctx, Shares<P> x, std::size_t rows,
                                  std::size_t cols) {
  MPCACHE_RETURN_IF_ERROR(CheckSize(x.size(), rows * cols, "the fixed operand"));
  MPCACHE_ASSIGN_OR_RETURN(MatrixMask<P> mask, ctx.prep().GetMatrixMask(rows, cols));
  // masked = X - A, computed in A's buffer (the mask itself is not needed afterwards:
  // [X] and D suffice), so a big operand is not copied.
  Shares<P> masked = std::move(mask.a);
  for (std::size_t i = 0; i < masked.size(); ++i) masked.v[i] = x.v[i] - masked.v[i];
  if constexpr (P::kMalicious) {
    for (std::size_t i = 0; i < masked.size(); ++i) masked.m[i] = x.m[i] - masked.m[i];
  }
  MPCACHE_ASSIGN_OR_RETURN(std::vector<std::uint64_t> d, ctx.OpenOwned(std::move(masked)));
  FixedOperand<P> f;
  f.mask_id = mask.id;
  f.rows = rows;
  f.cols = cols;
  f.d = std::move(d);
  f.x = std::move(x);
  return f;
}

template <typename P>
Result<Shares<P>> MatMul(Context<P>& ctx, const Shares<P>& x, std::size_t m,
                         const FixedOperand<P>& w) {
  const std::size_t k = w.rows, n = w.cols;
  MPCACHE_RETURN_IF_ERROR(CheckSize(x.size(), m * k, "the left operand"));
  MPCACHE_ASSIGN_OR_RETURN(MatrixTriple<P> t,
                           ctx.prep().GetMatrixTriple(w.mask_id, MaskSide::kRight, m));
  MPCACHE_ASSIGN_OR_RETURN(std::vector<std::uint64_t> e, ctx.OpenOwned(Sub(x, t.b)));
  const int th = ctx.options().threads;
  Shares<P> z = std::move(t.c);                           // [BA]
  AddPublicTimesShares(th, z, e.data(), w.x, m, k, n);    // + E[W]
  AddSharesTimesPublic(th, z, t.b, w.d.data(), m, k, n);  // + [B]D
  return z;
}

template <typename P>
Result<Shares<P>> MatMul(Context<P>& ctx, const FixedOperand<P>& x, const Shares<P>& y,
                         std::size_t n) {
  const std::size_t m = x.rows, k = x.cols;
  MPCACHE_RETURN_IF_ERROR(CheckSize(y.size(), k * n, "the right operand"));
  MPCACHE_ASSIGN_OR_RETURN(MatrixTriple<P> t,
                           ctx.prep().GetMatrixTriple(x.mask_id, MaskSide::kLeft, n));
  MPCACHE_ASSIGN_OR_RETURN(std::vector<std::uint64_t> e, ctx.OpenOwned(Sub(y, t.b)));
  const int th = ctx.options().threads;
  Shares<P> z = std::move(t.c);                           // [AB]
  AddSharesTimesPublic(th, z, x.x, e.data(), m, k, n);    // + [X]E
  AddPublicTimesShares(th, z, x.d.data(), t.b, m, k, n);  // + D[B]
  return z;
}

template <typename P>
Result<Shares<P>> MatMul(Context<P>& ctx, const Shares<P>& x, const Shares<P>& y, std::size_t m,
                         std::size_t k, std::size_t n) {
  MPCACHE_RETURN_IF_ERROR(CheckSize(x.size(), m * k, "the left operand"));
  MPCACHE_RETURN_IF_ERROR(CheckSize(y.size(), k * n, "the right operand"));
  MPCACHE_ASSIGN_OR_RETURN(MatrixMask<P> mask, ctx.prep().GetMatrixMask(m, k));
  MPCACHE_ASSIGN_OR_RETURN(MatrixTriple<P> t,
                           ctx.prep().GetMatrixTriple(mask.id, MaskSide::kLeft, n));
  // Open [X - A | Y - B] in one round.
  Shares<P> masked = Sub(x, mask.a);
  masked.Append(Sub(y, t.b));
  MPCACHE_ASSIGN_OR_RETURN(std::vector<std::uint64_t> opened, ctx.OpenOwned(std::move(masked)));
  const std::uint64_t* d = opened.data();
  const std::uint64_t* e = opened.data() + m * k;
  const int th = ctx.options().threads;
  Shares<P> z = std::move(t.c);                  // [AB]
  AddSharesTimesPublic(th, z, x, e, m, k, n);    // + [X]E
  AddPublicTimesShares(th, z, d, t.b, m, k, n);  // + D[B]
  return z;
}

// P names a type in explicit instantiations: it cannot be parenthesised.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define MPCACHE_INSTANTIATE_MATMUL(P)                                                              \
  template Shares<P> MatMulPublicRight<P>(const Context<P>&, const Shares<P>&, std::size_t,        \
                                          std::size_t, std::span<const std::uint64_t>,             \
                                          std::size_t);                                            \
  template Shares<P> MatMulPublicLeft<P>(const Context<P>&, std::span<const std::uint64_t>,        \
                                         std::size_t, std::size_t, const Shares<P>&, std::size_t); \
  template Result<FixedOperand<P>> MaskFixed<P>(Context<P>&, Shares<P>, std::size_t, std::size_t); \
  template Result<Shares<P>> MatMul<P>(Context<P>&, const Shares<P>&, std::size_t,                 \
                                       const FixedOperand<P>&);                                    \
  template Result<Shares<P>> MatMul<P>(Context<P>&, const FixedOperand<P>&, const Shares<P>&,      \
                                       std::size_t);                                               \
  template Result<Shares<P>> MatMul<P>(Context<P>&, const Shares<P>&, const Shares<P>&,            \
                                       std::size_t, std::size_t, std::size_t);
// NOLINTEND(bugprone-macro-parentheses)
MPCACHE_INSTANTIATE_MATMUL(SemiHonest)
MPCACHE_INSTANTIATE_MATMUL(Spdz2k)

}  // namespace mpcache::mpc
