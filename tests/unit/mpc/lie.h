// The arithmetic lie the attacker tests tell (tests/unit/mpc, tests/unit/compare,
// tests/unit/infer, the lying party of tests/e2e), written once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace mpcache::mpc {

// The arithmetic lie every test liar tells: add 2^bit to the little-endian value in `value`
// (its width is value.size() bytes), with carry; a bit beyond the width is clamped to the
// top bit. Returns the bit actually used.
inline int AddPowerOfTwo(std::span<std::uint8_t> value, int bit) {
  const int top = static_cast<int>(8 * value.size()) - 1;
  if (bit > top) bit = top;
  unsigned carry = 0;
  for (std::size_t i = 0; i < value.size(); ++i) {
    unsigned add = carry;
    if (i == static_cast<std::size_t>(bit / 8)) add += 1u << (bit % 8);
    const unsigned s = value[i] + add;
    value[i] = static_cast<std::uint8_t>(s);
    carry = s >> 8;
  }
  return bit;
}

}  // namespace mpcache::mpc
