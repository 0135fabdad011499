// Which products of an edaBit's bits the dealer adds, so that the comparison's first two
// tree levels are local (docs/comparison.md). The 63 low bit positions are cut into 16
// groups of kGroupBits = 4 consecutive bits (the last has 3: bits 60..62); for each group
// the dealer gives the AND of every subset of its bits with at least two members (11 per
// group of 4, 4 for the group of 3: 169 products per edaBit), shared in the binary domain
// like the bits themselves. Products are stored group-major, subsets in increasing mask
// order (bit t of the mask = bit base + t of r).
#pragma once

#include <array>
#include <bit>
#include <cstddef>

namespace mpcache::mpc::edabit {

inline constexpr int kGroupBits = 4;
inline constexpr int kGroups = 16;
inline constexpr int kLowBits = 63;

constexpr int GroupBase(int g) {
  return g * kGroupBits;
}
constexpr int GroupSize(int g) {
  return g + 1 < kGroups ? kGroupBits : kLowBits - (kGroups - 1) * kGroupBits;
}
// Index of `mask` among the masks with >= 2 bits, in increasing order (-1 for the others).
constexpr int MaskIndex(unsigned mask) {
  if (std::popcount(mask) < 2) return -1;
  int idx = 0;
  for (unsigned m = 0; m < mask; ++m) idx += std::popcount(m) >= 2 ? 1 : 0;
  return idx;
}
constexpr int ProductsIn(int g) {
  const int s = GroupSize(g);
  return (1 << s) - 1 - s;
}
constexpr int GroupOffset(int g) {
  int off = 0;
  for (int i = 0; i < g; ++i) off += ProductsIn(i);
  return off;
}
inline constexpr int kProducts = GroupOffset(kGroups);  // 169
static_assert(kProducts == 169);

}  // namespace mpcache::mpc::edabit
