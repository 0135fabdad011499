#include "infer/fixed_batch.h"

#include <string>

namespace mpcache::infer {

using mpc::FixedOperand;
using mpc::MaskSide;
using mpc::Shares;

template <typename P>
Result<std::vector<FixedOperand<P>>> MaskFixedMany(mpc::Context<P>& ctx,
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
    MPCACHE_ASSIGN_OR_RETURN(mpc::MatrixMask<P> mask, ctx.prep().GetMatrixMask(r.rows, r.cols));
    masked.Append(mpc::Sub(r.x, mask.a));
    out[i].mask_id = mask.id;
    out[i].rows = r.rows;
    out[i].cols = r.cols;
    out[i].x = std::move(r.x);
  }
  if (out.empty()) return out;
  MPCACHE_ASSIGN_OR_RETURN(std::vector<std::uint64_t> d, ctx.OpenOwned(std::move(masked)));
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
  std::vector<mpc::MatrixTriple<P>> triples;
  triples.reserve(jobs_.size());
  Shares<P> masked;
  for (std::size_t i = 0; i < jobs_.size(); ++i) {
    const Job& j = jobs_[i];
    const std::size_t want =
        j.side == MaskSide::kRight ? j.other * j.fixed->rows : j.fixed->cols * j.other;
    if (j.fresh->size() != want) {
      return InvalidArgument("fixed product " + std::to_string(i) + ": fresh operand has " +
                             std::to_string(j.fresh->size()) + " elements, the shape needs " +
                             std::to_string(want));
    }
    MPCACHE_ASSIGN_OR_RETURN(mpc::MatrixTriple<P> t,
                             ctx_.prep().GetMatrixTriple(j.fixed->mask_id, j.side, j.other));
    masked.Append(mpc::Sub(*j.fresh, t.b));
    triples.push_back(std::move(t));
  }
  MPCACHE_ASSIGN_OR_RETURN(std::vector<std::uint64_t> e, ctx_.OpenOwned(std::move(masked)));
  std::size_t off = 0;
  for (std::size_t i = 0; i < jobs_.size(); ++i) {
    Job& j = jobs_[i];
    mpc::MatrixTriple<P>& t = triples[i];
    const FixedOperand<P>& f = *j.fixed;
    const std::span<const std::uint64_t> ei(e.data() + off, j.fresh->size());
    off += j.fresh->size();
    Shares<P> z = std::move(t.c);
    if (j.side == MaskSide::kRight) {
      // x (m x k) W (k x n) = E[W] + [B]D + [BA]
      const std::size_t m = j.other, k = f.rows, n = f.cols;
      mpc::AddInPlace(z, mpc::MatMulPublicLeft<P>(ctx_, ei, m, k, f.x, n));
      mpc::AddInPlace(z, mpc::MatMulPublicRight<P>(ctx_, t.b, m, k, f.d, n));
    } else {
      // X (m x k) y (k x n) = [X]E + D[B] + [AB]
      const std::size_t m = f.rows, k = f.cols, n = j.other;
      mpc::AddInPlace(z, mpc::MatMulPublicRight<P>(ctx_, f.x, m, k, ei, n));
      mpc::AddInPlace(z, mpc::MatMulPublicLeft<P>(ctx_, f.d, m, k, t.b, n));
    }
    j.out = std::move(z);
  }
  return Status::Ok();
}

template Result<std::vector<FixedOperand<mpc::SemiHonest>>> MaskFixedMany(
    mpc::Context<mpc::SemiHonest>&, std::vector<FixedRequest<mpc::SemiHonest>>);
template Result<std::vector<FixedOperand<mpc::Spdz2k>>> MaskFixedMany(
    mpc::Context<mpc::Spdz2k>&, std::vector<FixedRequest<mpc::Spdz2k>>);
template class FixedProductBatch<mpc::SemiHonest>;
template class FixedProductBatch<mpc::Spdz2k>;

}  // namespace mpcache::infer
