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
// Index of `mask` (a group's bits: < 2^kGroupBits) among the masks with >= 2 bits, in
// increasing order (-1 for the others); a table, as the dealer asks it for every product.
inline constexpr std::array<int, 1u << kGroupBits> kMaskIndex = [] {
  std::array<int, 1u << kGroupBits> idx{};
  int next = 0;
  for (unsigned m = 0; m < idx.size(); ++m) idx[m] = std::popcount(m) >= 2 ? next++ : -1;
  return idx;
}();
constexpr int MaskIndex(unsigned mask) {
  return mask < kMaskIndex.size() ? kMaskIndex[mask] : -1;
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

// A malicious edaBit as one row of 64-bit words (the dealer's unit, preproc/bit_batch.h, and
// EdaBits<Spdz2k>::rows): the binary values — bits 0..63, then the products — each in bit 0
// of its word; their GF(2^64) MAC shares in the same order; then [r] (lo, hi) and its MAC
// (lo, hi).
inline constexpr std::size_t kBinaryWords = 64 + kProducts;  // 233
inline constexpr std::size_t kRowWords = 2 * kBinaryWords + 4;
constexpr std::size_t BitWord(int j) {
  return static_cast<std::size_t>(j);
}
constexpr std::size_t ProductWord(int k) {
  return 64 + static_cast<std::size_t>(k);
}
constexpr std::size_t MacOf(std::size_t value_word) {
  return kBinaryWords + value_word;
}
inline constexpr std::size_t kRWord = 2 * kBinaryWords;         // [r] lo, hi
inline constexpr std::size_t kRMacWord = 2 * kBinaryWords + 2;  // its MAC lo, hi

}  // namespace mpcache::mpc::edabit
