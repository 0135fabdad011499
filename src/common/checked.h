// Overflow-checked size arithmetic for sizes that come from a peer (counts, rows, cols,
// element and byte sizes of preprocessing requests and batches). Every product or sum of
// such sizes goes through these, so a request whose size does not fit in 64 bits is
// refused (kInvalidArgument naming the field) instead of wrapping to a small number.
#pragma once

#include <concepts>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace mpcache {

// a * b and a + b, or nullopt when the exact result does not fit in T.
template <std::unsigned_integral T>
constexpr std::optional<T> CheckedMul(T a, T b) {
  T out = 0;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}
template <std::unsigned_integral T>
constexpr std::optional<T> CheckedAdd(T a, T b) {
  T out = 0;
  if (__builtin_add_overflow(a, b, &out)) return std::nullopt;
  return out;
}

// The same as a Result; `what` names the size ("matrix-mask rows x cols") in the error.
inline Result<std::uint64_t> MulSize(std::uint64_t a, std::uint64_t b, std::string_view what) {
  if (auto v = CheckedMul(a, b)) return *v;
  return InvalidArgument(std::string(what) + " = " + std::to_string(a) + " x " + std::to_string(b) +
                         " overflows 64 bits");
}
inline Result<std::uint64_t> AddSize(std::uint64_t a, std::uint64_t b, std::string_view what) {
  if (auto v = CheckedAdd(a, b)) return *v;
  return InvalidArgument(std::string(what) + " = " + std::to_string(a) + " + " + std::to_string(b) +
                         " overflows 64 bits");
}

}  // namespace mpcache
