// A party-side reserve of comparison material: the dealer's answers are appended as they
// arrive (Add) and Get* calls take items from the front (Take), so the party fetches whole
// chunks ahead of need instead of paying a round trip to the dealer per comparison. The
// three parties make the same calls in the same order, so their reserves stay aligned item
// for item. Semi-honest binary shares are bit-packed (bit i in word i / 64, bit i % 64);
// the reserve appends and slices them at any bit offset.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

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
  if constexpr (P::kMalicious) {
    f(a.rows, b.rows);
  } else {
    for (std::size_t j = 0; j < a.bits.size(); ++j) f(a.bits[j], b.bits[j]);
    if (a.prods.size() < b.prods.size()) a.prods.resize(b.prods.size());
    for (std::size_t j = 0; j < b.prods.size(); ++j) f(a.prods[j], b.prods[j]);
  }
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
template <typename P, typename F>
void ForFields(mpc::LtzTuples<P>& a, mpc::LtzTuples<P>& b, F f) {
  a.groups = b.groups;
  f(a.r, b.r);
  if constexpr (P::kMalicious) {
    f(a.rows, b.rows);
  } else {
    if (a.bin.size() < b.bin.size()) a.bin.resize(b.bin.size());
    for (std::size_t j = 0; j < b.bin.size(); ++j) f(a.bin[j], b.bin[j]);
    if (a.mono.size() < b.mono.size()) a.mono.resize(b.mono.size());
    for (std::size_t j = 0; j < b.mono.size(); ++j) f(a.mono[j], b.mono[j]);
  }
}

// Items of a piece of material.
template <typename P>
std::size_t ItemCount(const mpc::BitTriples<P>& x) {
  return x.a.size();
}
template <typename P>
std::size_t ItemCount(const mpc::EdaBits<P>& x) {
  return x.r.size();
}
template <typename P>
std::size_t ItemCount(const mpc::DaBits<P>& x) {
  return x.a.size();
}
template <typename P>
std::size_t ItemCount(const mpc::RootTuples<P>& x) {
  return x.u.size();
}
template <typename P>
std::size_t ItemCount(const mpc::BitShares<P>& x) {
  return x.size();
}
template <typename P>
std::size_t ItemCount(const mpc::LtzTuples<P>& x) {
  return x.size();
}

// dst += src[from, from + n): arithmetic shares (one entry per item).
template <typename P>
void AppendRange(mpc::Shares<P>& dst, const mpc::Shares<P>& src, std::size_t from, std::size_t n) {
  const auto b = static_cast<std::ptrdiff_t>(from), e = static_cast<std::ptrdiff_t>(from + n);
  dst.v.insert(dst.v.end(), src.v.begin() + b, src.v.begin() + e);
  if constexpr (P::kMalicious) dst.m.insert(dst.m.end(), src.m.begin() + b, src.m.begin() + e);
}

// dst += src[from, from + n): binary shares (malicious: one lift per bit; semi-honest:
// packed bits, copied in runs that stay within one source and one destination word).
template <typename P>
void AppendRange(mpc::BitShares<P>& dst, const mpc::BitShares<P>& src, std::size_t from,
                 std::size_t n) {
  if constexpr (P::kMalicious) {
    const auto b = static_cast<std::ptrdiff_t>(from), e = static_cast<std::ptrdiff_t>(from + n);
    dst.v.insert(dst.v.end(), src.v.begin() + b, src.v.begin() + e);
    dst.m.insert(dst.m.end(), src.m.begin() + b, src.m.begin() + e);
  } else {
    const std::size_t old = dst.n;
    dst.v.resize(mpc::WordsFor(old + n), 0);
    if (old % 64 != 0) dst.v[old / 64] &= (std::uint64_t{1} << (old % 64)) - 1;  // drop padding
    for (std::size_t i = 0; i < n;) {
      const std::size_t s = from + i, d = old + i;
      const std::size_t take = std::min({n - i, 64 - s % 64, 64 - d % 64});
      const std::uint64_t mask = take == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << take) - 1;
      dst.v[d / 64] |= ((src.v[s / 64] >> (s % 64)) & mask) << (d % 64);
      i += take;
    }
  }
  dst.n += n;
}

// dst += src[from, from + n): item-major edaBit rows (the rows are shared, not copied).
template <typename P>
void AppendRange(mpc::EdaRows& dst, const mpc::EdaRows& src, std::size_t from, std::size_t n) {
  const auto b = static_cast<std::ptrdiff_t>(from), e = static_cast<std::ptrdiff_t>(from + n);
  dst.rows.insert(dst.rows.end(), src.rows.begin() + b, src.rows.begin() + e);
  // Keep exactly the chunks these rows live in (consumed chunks are let go).
  auto holds = [](const auto& o, const std::uint64_t* row) {
    return row >= o->data() && row < o->data() + o->size();
  };
  const std::shared_ptr<std::vector<std::uint64_t>>* last = nullptr;
  for (std::size_t i = from; i < from + n; ++i) {
    const std::uint64_t* row = src.rows[i];
    if (last != nullptr && holds(*last, row)) continue;
    for (const auto& o : src.owners) {
      if (!holds(o, row)) continue;
      last = &o;
      if (std::find(dst.owners.begin(), dst.owners.end(), o) == dst.owners.end()) {
        dst.owners.push_back(o);
      }
      break;
    }
  }
}

template <typename P, typename T>
class BitReserve {
 public:
  // Appends the items of `more` behind the ones held.
  void Add(T more) {
    const std::size_t got = ItemCount<P>(more);
    if (got == 0) return;
    if (left_ == 0) {
      reserve_ = std::move(more);
      offset_ = 0;
      left_ = got;
      return;
    }
    T merged;
    ForFields<P>(merged, reserve_,
                 [&](auto& dst, auto& src) { AppendRange<P>(dst, src, offset_, left_); });
    ForFields<P>(merged, more, [&](auto& dst, auto& src) { AppendRange<P>(dst, src, 0, got); });
    reserve_ = std::move(merged);
    offset_ = 0;
    left_ += got;
  }
  // Takes the first n items; the caller checks left() >= n first.
  T Take(std::size_t n) {
    T out;
    ForFields<P>(out, reserve_,
                 [&](auto& dst, auto& src) { AppendRange<P>(dst, src, offset_, n); });
    offset_ += n;
    left_ -= n;
    return out;
  }
  std::size_t left() const { return left_; }

 private:
  T reserve_;
  std::size_t offset_ = 0, left_ = 0;
};

}  // namespace mpcache::daemon
