// Fixed-point numbers over the ring Z_2^64: a real x is the ring element round(x * 2^f)
// (two's complement for negatives). Shared by the plaintext fixed-point simulation
// (model/) and the secure engine (mpc/), so both use exactly the same encoding.
#pragma once

#include <cmath>
#include <cstdint>

namespace mpcache {

using Ring64 = std::uint64_t;  // element of Z_2^64, arithmetic wraps

// 18 fractional bits: the precision docs/fixed-point.md recommends (at 16 the golden run's
// closest greedy decision is right by luck); configs and kernels default to it too.
inline constexpr int kDefaultFracBits = 18;

struct FixedPoint {
  int frac_bits = kDefaultFracBits;

  double Scale() const { return std::ldexp(1.0, frac_bits); }
  // Nearest ring element to x * 2^f (saturates far outside the ring's range).
  Ring64 Encode(double x) const {
    const double scaled = std::nearbyint(x * Scale());
    if (scaled >= 0x1.0p63) return static_cast<Ring64>(INT64_MAX);
    if (scaled <= -0x1.0p63) return static_cast<Ring64>(INT64_MIN);
    return static_cast<Ring64>(static_cast<std::int64_t>(scaled));
  }
  double Decode(Ring64 v) const {
    return static_cast<double>(static_cast<std::int64_t>(v)) / Scale();
  }
  // Exact arithmetic shift right by f: the plaintext twin of secure truncation
  // (which may add one unit in the last place).
  Ring64 Truncate(Ring64 v) const { return Truncate(v, frac_bits); }
  static Ring64 Truncate(Ring64 v, int bits) {
    return static_cast<Ring64>(static_cast<std::int64_t>(v) >> bits);
  }
  // Product of two fixed-point values, truncated back to f fractional bits.
  Ring64 Mul(Ring64 a, Ring64 b) const { return Truncate(a * b); }
  // One unit in the last place, as a real number.
  double Ulp() const { return 1.0 / Scale(); }
};

}  // namespace mpcache
