// A party-side reserve of comparison material (malicious mode): when a Get* finds the
// reserve short it asks the dealer for at least a chunk of items, so most calls are served
// locally instead of costing a round trip to the dealer. The three parties make the same
// calls in the same order, so their reserves stay aligned item for item. Semi-honest
// material is bit-packed in units of 64 and is fetched exactly as asked (no reserve).
#pragma once

#include <cstddef>
#include <functional>

#include "mpc/compare/bit_preprocessing.h"

namespace mpcache::daemon {

// Calls f(a_field, b_field) for every share vector of two items of the same type.
template <typename P, typename F>
void ForFields(mpc::BitTriples<P>& a, mpc::BitTriples<P>& b, F f) {
  f(a.a, b.a), f(a.b, b.b), f(a.c, b.c);
}
template <typename P, typename F>
void ForFields(mpc::EdaBits<P>& a, mpc::EdaBits<P>& b, F f) {
  f(a.r, b.r);
  for (std::size_t j = 0; j < a.bits.size(); ++j) f(a.bits[j], b.bits[j]);
  if (a.prods.size() < b.prods.size()) a.prods.resize(b.prods.size());
  for (std::size_t j = 0; j < b.prods.size(); ++j) f(a.prods[j], b.prods[j]);
}
template <typename P, typename F>
void ForFields(mpc::DaBits<P>& a, mpc::DaBits<P>& b, F f) {
  f(a.b, b.b), f(a.a, b.a);
}
template <typename P, typename F>
void ForFields(mpc::RootTuples<P>& a, mpc::RootTuples<P>& b, F f) {
  f(a.u, b.u), f(a.v, b.v), f(a.w, b.w);
  for (std::size_t j = 0; j < a.mono.size(); ++j) f(a.mono[j], b.mono[j]);
}
template <typename P, typename F>
void ForFields(mpc::BitShares<P>& a, mpc::BitShares<P>& b, F f) {
  f(a, b);
}

// Elementwise (malicious) vectors: v and m hold one entry per item.
template <typename S>
void AppendRange(S& dst, const S& src, std::size_t from, std::size_t n) {
  dst.v.insert(dst.v.end(), src.v.begin() + static_cast<std::ptrdiff_t>(from),
               src.v.begin() + static_cast<std::ptrdiff_t>(from + n));
  dst.m.insert(dst.m.end(), src.m.begin() + static_cast<std::ptrdiff_t>(from),
               src.m.begin() + static_cast<std::ptrdiff_t>(from + n));
  if constexpr (requires { dst.n; }) dst.n = dst.v.size();
}

template <typename P, typename T>
class BitReserve {
 public:
  using Fetch = std::function<Result<T>(std::size_t n)>;
  // Takes n items: from the reserve, topped up with max(n - left, chunk) new ones.
  Result<T> Take(std::size_t n, std::size_t chunk, const Fetch& fetch) {
    if (left_ < n) {
      MPCACHE_ASSIGN_OR_RETURN(T more, fetch(std::max(n - left_, chunk)));
      T merged;
      ForFields<P>(merged, reserve_,
                   [&](auto& dst, auto& src) { AppendRange(dst, src, offset_, left_); });
      const std::size_t got = Count(more);
      ForFields<P>(merged, more, [&](auto& dst, auto& src) { AppendRange(dst, src, 0, got); });
      reserve_ = std::move(merged);
      offset_ = 0;
      left_ += got;
      if (left_ < n) return Exhausted("the dealer sent fewer comparison items than asked");
    }
    T out;
    ForFields<P>(out, reserve_, [&](auto& dst, auto& src) { AppendRange(dst, src, offset_, n); });
    offset_ += n;
    left_ -= n;
    return out;
  }
  std::size_t left() const { return left_; }

 private:
  static std::size_t Count(T& x) {
    std::size_t n = 0;
    T empty;
    ForFields<P>(x, empty, [&](auto& f, auto&) { n = f.v.size(); });
    return n;
  }
  T reserve_;
  std::size_t offset_ = 0, left_ = 0;
};

}  // namespace mpcache::daemon
