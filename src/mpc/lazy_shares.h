// Lazy truncation: values whose probabilistic truncation has not been opened yet
// (docs/mpc-core.md "Lazy truncation").
//
// PendingTrunc holds z and a truncation width f; T_f(z) needs z + 2^62 + r opened. Nothing
// is sent when it is made: its elements are opened by whichever comes first —
//   * a consumer that opens them itself in its own exchange (a fused product,
//     mpc/fused_product.h; a comparison whose opening is narrow enough, mpc/compare/
//     secure_backend.h): it Claims the elements before the exchange and Resolves them after;
//   * any other exchange of the session: registered with Context::Defer, the source hands
//     the remaining elements over (Prepare draws their trunc pairs) and finishes them.
// Either way a truncation costs no round of its own. Each element is opened exactly once
// (a consumer that takes an element in twice opens it twice, under two masks; only the
// first result is kept).
//
// LazyShares is a vector whose elements are pub + s + coef T_f(z): a public part, a plain
// share part (when has_s) and at most one pending term (when src_of >= 0), so that linear
// operations on truncated values stay local and the truncation can ride on the next
// product or comparison.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "mpc/context.h"

namespace mpcache::mpc {

template <typename P>
class PendingTrunc final : public DeferredSource<P> {
 public:
  PendingTrunc(Shares<P> z, int bits);

  std::size_t size() const { return z_.size(); }
  int bits() const { return bits_; }
  const Shares<P>& z() const { return z_; }
  bool done(std::size_t i) const { return state_[i] == kDone; }
  // Element i's truncation, valid once done(i).
  const Shares<P>& values() const { return value_; }

  // A consumer opens element i itself in the coming exchange: Prepare skips it.
  void Claim(std::size_t i) {
    if (state_[i] == kPending || state_[i] == kWanted) state_[i] = kClaimed;
  }
  // Held: the source's elements do not ride every exchange, only those asked for (Want) —
  // so that an element a later product would take in as its truncation part (one opened
  // value) is not opened early and then opened again as a plain share (two).
  void Hold() { held_ = true; }
  // Element i must be opened at the next exchange (a flush of a held source).
  void Want(std::size_t i) {
    if (state_[i] == kPending) state_[i] = kWanted;
  }
  // The consumer's result for element i (element j of `from`); the first one is kept.
  void Resolve(std::size_t i, const Shares<P>& from, std::size_t j);
  std::size_t pending() const { return pending_; }

  Result<Shares<P>> Prepare(Context<P>& ctx) override;
  Status Finish(Context<P>& ctx, std::span<const std::uint64_t> opened) override;

 private:
  enum : std::uint8_t { kPending = 0, kClaimed = 1, kDone = 2, kWanted = 3 };
  Shares<P> z_;
  int bits_;
  bool held_ = false;
  std::vector<std::uint8_t> state_;
  std::size_t pending_;  // elements not done
  Shares<P> value_;
  std::vector<std::size_t> flushing_;  // the elements of the exchange in progress
  TruncPairs<P> pair_;
};

// A vector of n values pub_i + (has_s_i ? s_i : 0) + sum over the element's pending terms of
// coef T(z of the term's source at the term's element). Most elements have no term or one;
// sums (RowSum, Add) can hold several, which only a comparison takes in as they are.
template <typename P>
struct LazyShares {
  struct Term {
    std::int32_t src = -1;  // index into src
    std::uint32_t at = 0;   // the element of the source
    std::uint64_t coef = 0;
  };
  Shares<P> s;                                        // zeros where !has_s
  std::vector<std::uint8_t> has_s;                    // n
  std::vector<std::uint64_t> pub;                     // n
  std::vector<std::shared_ptr<PendingTrunc<P>>> src;  // the distinct sources used
  std::vector<std::uint32_t> off;  // n + 1: element i's terms are terms[off[i], off[i+1])
  std::vector<Term> terms;

  LazyShares() : off(1, 0) {}
  // Plain shares (implicit: kernels take shares in and hand lazy values out).
  LazyShares(Shares<P> shares)  // NOLINT(google-explicit-constructor)
      : s(std::move(shares)), has_s(s.size(), 1), pub(s.size(), 0), off(s.size() + 1, 0) {}
  // n zeros (no share part, no pending term).
  static LazyShares Zeros(std::size_t n) {
    LazyShares out{Shares<P>(n)};
    std::fill(out.has_s.begin(), out.has_s.end(), 0);
    return out;
  }
  std::size_t size() const { return s.size(); }
  std::size_t term_count(std::size_t i) const { return off[i + 1] - off[i]; }
  bool pending(std::size_t i) const { return off[i + 1] > off[i]; }
  std::span<const Term> terms_of(std::size_t i) const {
    return {terms.data() + off[i], off[i + 1] - off[i]};
  }
  PendingTrunc<P>& source(const Term& t) const { return *src[static_cast<std::size_t>(t.src)]; }
};

}  // namespace mpcache::mpc
