#include "mpc/matmul.h"

#include <string>

#include "mpc/fixed_batch.h"
#include "mpc/matmul_kernels.h"

namespace mpcache::mpc {
namespace {

using kernels::AccumulateProduct;
using kernels::AddPublicTimesShares;
using kernels::AddSharesTimesPublic;

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
  std::vector<FixedRequest<P>> one;
  one.push_back({std::move(x), rows, cols});
  MPCACHE_ASSIGN_OR_RETURN(std::vector<FixedOperand<P>> f, MaskFixedMany(ctx, std::move(one)));
  return std::move(f[0]);
}

template <typename P>
Result<Shares<P>> MatMul(Context<P>& ctx, const Shares<P>& x, std::size_t m,
                         const FixedOperand<P>& w) {
  MPCACHE_RETURN_IF_ERROR(CheckSize(x.size(), m * w.rows, "the left operand"));
  FixedProductBatch<P> batch(ctx);
  const std::size_t h = batch.PrepareRight(x, m, w);
  MPCACHE_RETURN_IF_ERROR(batch.Exchange());
  return batch.Take(h);
}

template <typename P>
Result<Shares<P>> MatMul(Context<P>& ctx, const FixedOperand<P>& x, const Shares<P>& y,
                         std::size_t n) {
  MPCACHE_RETURN_IF_ERROR(CheckSize(y.size(), x.cols * n, "the right operand"));
  FixedProductBatch<P> batch(ctx);
  const std::size_t h = batch.PrepareLeft(x, y, n);
  MPCACHE_RETURN_IF_ERROR(batch.Exchange());
  return batch.Take(h);
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
