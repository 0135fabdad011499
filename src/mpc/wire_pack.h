// How opened values travel (internal to mpc/context.cc and mpc/split_open.cc): each value as
// its low `width` little-endian bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

namespace mpcache::mpc::wire {

// Calls f(std::integral_constant<std::size_t, width>) for width in 1..sizeof(W): the loops
// below then copy a compile-time number of bytes per value (no memcpy call per value).
template <typename W, typename F>
void WithWidth(std::size_t width, F&& f) {
  [&]<std::size_t... k>(std::index_sequence<k...>) {
    (void)((width == k + 1 ? (f(std::integral_constant<std::size_t, k + 1>{}), true) : false) ||
           ...);
  }
  (std::make_index_sequence<sizeof(W)>{});
}

// Opened values travel as their low `width` little-endian bytes: out = those bytes of each.
template <typename W>
inline void PackLow(std::span<const W> v, std::size_t width, std::vector<std::uint8_t>& out) {
  out.resize(v.size() * width);
  WithWidth<W>(width, [&](auto w) {
    constexpr std::size_t kW = decltype(w)::value;
    std::uint8_t* o = out.data();
    for (std::size_t i = 0; i < v.size(); ++i) std::memcpy(o + i * kW, &v[i], kW);
  });
}

// The values `in` holds (PackLow's form) into dst: added to it, or assigned.
template <typename W>
inline void UnpackLow(std::span<const std::uint8_t> in, std::size_t width, std::span<W> dst,
                      bool add) {
  WithWidth<W>(width, [&](auto w) {
    constexpr std::size_t kW = decltype(w)::value;
    const std::uint8_t* b = in.data();
    for (std::size_t i = 0; i < dst.size(); ++i) {
      W x = 0;
      std::memcpy(&x, b + i * kW, kW);
      dst[i] = add ? dst[i] + x : x;
    }
  });
}

// The part of a word an opening of `width` bytes determines.
template <typename W>
inline W WireMask(std::size_t width) {
  return width >= sizeof(W) ? ~W{0} : (W{1} << (8 * width)) - 1;
}

}  // namespace mpcache::mpc::wire
