#include "mpc/lazy_shares.h"

#include <string>
#include <utility>

#include "mpc/trunc.h"

namespace mpcache::mpc {

template <typename P>
PendingTrunc<P>::PendingTrunc(Shares<P> z, int bits)
    : z_(std::move(z)),
      bits_(bits),
      state_(z_.size(), kPending),
      pending_(z_.size()),
      value_(z_.size()) {}

template <typename P>
void PendingTrunc<P>::Resolve(std::size_t i, const Shares<P>& from, std::size_t j) {
  if (state_[i] == kDone) return;
  state_[i] = kDone;
  --pending_;
  value_.CopyFrom(i, from, j);
}

template <typename P>
Result<Shares<P>> PendingTrunc<P>::Prepare(Context<P>& ctx) {
  flushing_.clear();
  for (std::size_t i = 0; i < state_.size(); ++i) {
    if (state_[i] == kWanted || (state_[i] == kPending && !held_)) flushing_.push_back(i);
  }
  if (flushing_.empty()) return Shares<P>();
  if (bits_ < 1 || bits_ > 61) {
    return InvalidArgument("deferred truncation by " + std::to_string(bits_) + " bits: need 1..61");
  }
  MPCACHE_ASSIGN_OR_RETURN(pair_, ctx.prep().GetTruncPairs(flushing_.size(), bits_));
  Shares<P> c(flushing_.size());
  for (std::size_t k = 0; k < flushing_.size(); ++k) {
    c.CopyFrom(k, z_, flushing_[k]);
    c.AddFrom(k, pair_.r, k);
  }
  AddPublicInPlace<P>(ctx.key(), c, std::span<const std::uint64_t>(&kTruncBias, 1));
  return c;
}

template <typename P>
Status PendingTrunc<P>::Finish(Context<P>& ctx, std::span<const std::uint64_t> opened) {
  if (opened.size() != flushing_.size()) return Internal("deferred truncation: size mismatch");
  const bool p0 = ctx.self() == 0;
  const u128 alpha = ctx.key().alpha;
  for (std::size_t k = 0; k < flushing_.size(); ++k) {
    const std::size_t i = flushing_[k];
    const TruncOpened t = TruncFromOpened(opened[k], bits_);
    value_.v[i] = pair_.r_top.v[k] * t.coef - pair_.r_shift.v[k];
    if (p0) value_.v[i] += t.pub;
    if constexpr (P::kMalicious) {
      value_.m[i] = pair_.r_top.m[k] * t.coef - pair_.r_shift.m[k] + alpha * t.pub;
    }
    if (state_[i] != kDone) --pending_;
    state_[i] = kDone;
  }
  flushing_.clear();
  pair_ = TruncPairs<P>();
  return Status::Ok();
}

template class PendingTrunc<SemiHonest>;
template class PendingTrunc<Spdz2k>;

}  // namespace mpcache::mpc
