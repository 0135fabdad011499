// Building LazyShares element by element: the helpers SecureBackend's element-wise
// operations (secure_backend.cc) and its products (secure_products.cc) share. Internal to
// mpc/compare; not part of the backend's interface.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "mpc/fused_product.h"
#include "mpc/lazy_shares.h"

namespace mpcache::mpc::lazy_build {

template <typename P>
using Term = typename LazyShares<P>::Term;

// Drops the sources no term refers to (so that finished ones can be freed).
template <typename P>
inline void Compact(LazyShares<P>& v) {
  std::vector<std::int32_t> remap(v.src.size(), -1);
  for (const auto& t : v.terms) remap[static_cast<std::size_t>(t.src)] = 0;
  std::vector<std::shared_ptr<PendingTrunc<P>>> kept;
  for (std::size_t k = 0; k < v.src.size(); ++k) {
    if (remap[k] < 0) continue;
    remap[k] = static_cast<std::int32_t>(kept.size());
    kept.push_back(std::move(v.src[k]));
  }
  for (auto& t : v.terms) t.src = remap[static_cast<std::size_t>(t.src)];
  v.src = std::move(kept);
}

// A vector of n elements with no terms yet: fill s/has_s/pub at i and call EndElement in
// order i = 0, 1, ...
template <typename P>
inline LazyShares<P> Building(std::size_t n) {
  LazyShares<P> out = LazyShares<P>::Zeros(n);
  out.off.assign(1, 0);
  out.off.reserve(n + 1);
  return out;
}
template <typename P>
inline void EndElement(LazyShares<P>& v) {
  v.off.push_back(static_cast<std::uint32_t>(v.terms.size()));
}

// Element j of `from` as the next element i of `to` (from's sources at src_offset in to's).
template <typename P>
inline void AppendElement(LazyShares<P>& to, std::size_t i, const LazyShares<P>& from,
                          std::size_t j, std::int32_t src_offset, std::uint64_t scale = 1) {
  to.s.CopyFrom(i, from.s, j);
  to.has_s[i] = from.has_s[j];
  to.pub[i] = from.pub[j];
  if (scale != 1) {
    to.s.v[i] *= scale;
    if constexpr (P::kMalicious) to.s.m[i] *= scale;
    to.pub[i] *= scale;
    if (scale == 0) to.has_s[i] = 0;
  }
  for (const auto& t : from.terms_of(j)) {
    if (t.coef * scale != 0) to.terms.push_back({t.src + src_offset, t.at, t.coef * scale});
  }
  EndElement(to);
}

template <typename P>
inline std::uint8_t Comps(const LazyShares<P>& v, std::size_t i) {
  return static_cast<std::uint8_t>((v.has_s[i] != 0 ? FusedShape::kS : 0) |
                                   (v.pending(i) ? FusedShape::kT : 0));
}

}  // namespace mpcache::mpc::lazy_build
