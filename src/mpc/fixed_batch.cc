#include "mpc/fixed_batch.h"

#include <string>

#include "mpc/matmul_kernels.h"

namespace mpcache::mpc {

template <typename P>
Result<std::vector<FixedOperand<P>>> MaskFixedMany(Context<P>& ctx,
                                                   std::vector<FixedRequest<P>> requests) {
  std::vector<FixedOperand<P>> out(requests.size());
  Shares<P> masked;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    FixedRequest<P>& r = requests[i];
    if (r.x.size() != r.rows * r.cols) {
      return InvalidArgument("fixed operand " + std::to_string(i) + " has " +
                             std::to_string(r.x.size()) + " elements for a " +
                             std::to_string(r.rows) + " x " + std::to_string(r.cols) + " shape");
    }
    MPCACHE_ASSIGN_OR_RETURN(MatrixMask<P> mask, ctx.prep().GetMatrixMask(r.rows, r.cols));
    // X - A computed in A's buffer (the mask is not needed afterwards: [X] and D suffice);
    // a single operand is opened from that buffer without a copy.
    Shares<P> x_minus_a = std::move(mask.a);
    for (std::size_t e = 0; e < x_minus_a.size(); ++e) x_minus_a.v[e] = r.x.v[e] - x_minus_a.v[e];
    if constexpr (P::kMalicious) {
      for (std::size_t e = 0; e < x_minus_a.size(); ++e) {
        x_minus_a.m[e] = r.x.m[e] - x_minus_a.m[e];
      }
    }
    if (requests.size() == 1) {
      masked = std::move(x_minus_a);
    } else {
      masked.Append(x_minus_a);
    }
    out[i].mask_id = mask.id;
    out[i].rows = r.rows;
    out[i].cols = r.cols;
    out[i].x = std::move(r.x);
  }
  if (out.empty()) return out;
  MPCACHE_ASSIGN_OR_RETURN(std::vector<std::uint64_t> d, ctx.OpenOwned(std::move(masked)));
  if (out.size() == 1) {
    out[0].d = std::move(d);
    return out;
  }
  std::size_t off = 0;
  for (FixedOperand<P>& f : out) {
    const std::size_t n = f.rows * f.cols;
    f.d.assign(d.begin() + static_cast<std::ptrdiff_t>(off),
               d.begin() + static_cast<std::ptrdiff_t>(off + n));
    off += n;
  }
  return out;
}

template <typename P>
std::size_t FixedProductBatch<P>::PrepareRight(const Shares<P>& x, std::size_t m,
                                               const FixedOperand<P>& w) {
  jobs_.push_back({&w, &x, MaskSide::kRight, m, {}});
  return jobs_.size() - 1;
}

template <typename P>
std::size_t FixedProductBatch<P>::PrepareLeft(const FixedOperand<P>& x, const Shares<P>& y,
                                              std::size_t n) {
  jobs_.push_back({&x, &y, MaskSide::kLeft, n, {}});
  return jobs_.size() - 1;
}

template <typename P>
Status FixedProductBatch<P>::Exchange() {
  if (jobs_.empty()) return Status::Ok();
  std::vector<MatrixTriple<P>> triples;
  triples.reserve(jobs_.size());
  Shares<P> masked;
  for (std::size_t i = 0; i < jobs_.size(); ++i) {
    const Job& j = jobs_[i];
    const std::size_t want =
        j.side == MaskSide::kRight ? j.other * j.fixed->rows : j.fixed->cols * j.other;
    if (j.fresh->size() != want) {
      return InvalidArgument("fixed product " + std::to_string(i) + ": the fresh operand has " +
                             std::to_string(j.fresh->size()) + " elements, the shape needs " +
                             std::to_string(want));
    }
    MPCACHE_ASSIGN_OR_RETURN(MatrixTriple<P> t,
                             ctx_.prep().GetMatrixTriple(j.fixed->mask_id, j.side, j.other));
    masked.Append(Sub(*j.fresh, t.b));
    triples.push_back(std::move(t));
  }
  MPCACHE_ASSIGN_OR_RETURN(std::vector<std::uint64_t> e, ctx_.OpenOwned(std::move(masked)));
  const int th = ctx_.options().threads;
  std::size_t off = 0;
  for (std::size_t i = 0; i < jobs_.size(); ++i) {
    Job& j = jobs_[i];
    MatrixTriple<P>& t = triples[i];
    const FixedOperand<P>& f = *j.fixed;
    const std::uint64_t* ei = e.data() + off;
    off += j.fresh->size();
    Shares<P> z = std::move(t.c);
    if (j.side == MaskSide::kRight) {
      // x (m x k) W (k x n) = E[W] + [B]D + [BA]
      const std::size_t m = j.other, k = f.rows, n = f.cols;
      kernels::AddPublicTimesShares(th, z, ei, f.x, m, k, n);
      kernels::AddSharesTimesPublic(th, z, t.b, f.d.data(), m, k, n);
    } else {
      // X (m x k) y (k x n) = [X]E + D[B] + [AB]
      const std::size_t m = f.rows, k = f.cols, n = j.other;
      kernels::AddSharesTimesPublic(th, z, f.x, ei, m, k, n);
      kernels::AddPublicTimesShares(th, z, f.d.data(), t.b, m, k, n);
    }
    j.out = std::move(z);
  }
  return Status::Ok();
}

template Result<std::vector<FixedOperand<SemiHonest>>> MaskFixedMany(
    Context<SemiHonest>&, std::vector<FixedRequest<SemiHonest>>);
template Result<std::vector<FixedOperand<Spdz2k>>> MaskFixedMany(Context<Spdz2k>&,
                                                                 std::vector<FixedRequest<Spdz2k>>);
template class FixedProductBatch<SemiHonest>;
template class FixedProductBatch<Spdz2k>;

}  // namespace mpcache::mpc
