// The shape of a comparison in three rounds (docs/comparison.md, compare.h) and the dealer's
// comparison tuple that carries everything one LessThanZero value needs.
//
// An l-bit comparison (8 <= l <= 64) has G = ceil((l - 1) / 4) group nodes over the low
// l - 1 bit positions (edabit_layout.h's groups of 4; group 0 has no eq). Round 1 opens
// c = x + r and makes the group nodes locally. The nodes are cut into m consecutive
// *super-nodes* of k groups each (LtzShapeFor / kSuperSizes): round 2 (the combination
// round) opens every group node of a super-node with k >= 2 masked by fresh dealer bits,
// (lt_j ^ s_j, eq_j ^ t_j), and each super-node's (lt, eq) is then a GF(2) polynomial in the
// public masked bits and the masks: a public combination of the dealer's mask monomials
// (products of subsets of the masks, authenticated binary shares; SuperNode::monos).
// Round 3 is the fused root over the m super-nodes: it opens u = lt_top ^ r_top, the
// super-nodes' eq (but the bottom one's) and lt (but the top one's), masked by fresh bits
// whose arithmetic monomials the dealer gives (RootMonos), so that
// [x < 0] = c_top ^ u ^ R with R = sum_q lt_q prod_{p > q} eq_p comes out arithmetic.
// When every super-node has one group (G <= 4) there is no combination round: 2 rounds.
//
// The comparison tuple for G groups (one item per comparison; BitItem LtzItem(G) in
// preproc/bit_batch.h) holds, as binary values (XOR-shared, GF(2^64) MACs in malicious
// mode), in this order:
//   free (uniform, expanded from seeds at every party):
//     r's bits 0 .. W-1 (W = min(64, 4G + 1): every width with G groups),
//     the combination round's masks (each super-node with k >= 2: its singletons),
//     the root's 2m - 1 masks;
//   determined (products: corrected at the last party):
//     the group products of r's bits (edabit_layout.h's subsets, groups 0 .. G-1),
//     the combination round's mask products;
// then arithmetic: [r] (uniform over the share ring, r mod 2^W = the bits) and the root's
// arithmetic mask monomials (RootMonos, singletons included).
// Malicious row (64-bit words): values | their MACs | r lo hi | r MAC lo hi |
//   per root monomial: v lo hi, MAC lo hi.
// Semi-honest unit of 64 items: values (bitsliced: one word each) | r (64 words) |
//   per root monomial: 64 words.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "mpc/compare/edabit_layout.h"

namespace mpcache::mpc::ltz {

inline constexpr int kMinGroups = 2;
inline constexpr int kMaxGroups = 16;
inline constexpr int kMaxSuper = 5;  // groups in the largest super-node (G = 13)

constexpr int GroupsFor(int bits) {
  return (bits - 1 + edabit::kGroupBits - 1) / edabit::kGroupBits;
}

// Mask monomials of a super-node of k groups. Variables: bit 2j is the mask s_j of group j's
// lt (j = 0 is the super-node's lowest group), bit 2j + 1 the mask t_j of its eq (absent for
// global group 0). Its lt needs the monomials s_j prod_{i in S} t_i (S subset of i > j), its
// eq (not for the bottom one) prod_{i in S} t_i: 2^(k+1) - 2 of them, 3 2^(k-1) - 2 for the
// bottom one. Listed singletons first (the fresh masks), then by degree.
struct SuperNode {
  int first = 0;  // its lowest group
  int k = 1;
  bool bottom = false;  // holds group 0 (no eq in, no eq out)
  int vars = 0;         // masks = bits it opens in the combination round (0 when k == 1)
  std::vector<std::uint32_t> monos;
  // The polynomials as sets of monos indices, per opened pattern (bit 2j: group j's masked
  // lt, bit 2j + 1: its masked eq): bit i of lt[p] = monos[i] has coefficient 1; lt_one[p]:
  // the constant term. Only for k >= 2.
  std::vector<std::uint64_t> lt, eq;
  std::vector<std::uint8_t> lt_one, eq_one;
  // The same polynomials with the opened bits as variables too (the algebraic normal form of
  // each coefficient, for bitsliced evaluation): lt_anf[i] lists the patterns T whose
  // product prod_{b in T} opened_b is a term of monos[i]'s coefficient in lt; entry
  // monos.size() is the constant term's. Semi-honest shares evaluate 64 items per word so.
  std::vector<std::vector<std::uint32_t>> lt_anf, eq_anf;
  // Every pattern the two ANFs name, with each one's prefixes (the pattern less its lowest
  // bit, repeatedly), ascending: the products a bitsliced evaluation must make, each from
  // its prefix and one opened bit.
  std::vector<std::uint32_t> anf_terms;
};

// The fused root over m super-nodes (top = m - 1). Variables, in the order they are opened:
// 0: u = lt_top ^ r_top, 1: eq_top, then for q = m-2 .. 0: lt_q and (q > 0) eq_q.
// MSB' = u ^ R (R = sum_q lt_q prod_{p > q} eq_p) = u + R - 2 u R over the integers, and
// with each variable e + (1 - 2e) rho (e opened, rho its mask) a public combination of the
// arithmetic monomials of the masks: `monos` (bitmasks over the variables; 7, 19, 43 for
// m = 2, 3, 4). coef[p * (monos + 1) + i]: coefficient of monos[i] for the opened pattern p,
// the last one the constant term (mod 2^64).
struct RootMonos {
  int m = 0;
  int vars = 0;
  std::vector<std::uint32_t> monos;
  std::vector<std::uint64_t> coef;
  int VarLt(int q) const { return q == m - 1 ? 0 : 2 + 2 * (m - 2 - q); }
  int VarEq(int q) const { return q == m - 1 ? 1 : 3 + 2 * (m - 2 - q); }
};

struct LtzLayout {
  int groups = 0;
  int r_bits = 0;                 // W
  int low_bits = 0;               // positions covered by the groups: min(4G, 63)
  std::vector<SuperNode> supers;  // bottom .. top
  bool combine = false;           // a combination round (some super-node has k >= 2)
  int rounds = 0;                 // 2 or 3
  int combine_bits = 0;           // bits opened per value in the combination round
  RootMonos root;
  // Binary values.
  int free_values = 0, num_binary = 0;
  int super_fresh = 0;          // first fresh mask of the combination round
  int root_masks = 0;           // first root mask
  int eda_products = 0;         // first group product
  std::vector<int> super_base;  // per super-node: value of its first singleton (-1 if k == 1)
  std::vector<int> super_prod;  // per super-node: value of its first product
  std::vector<int> group_prod;  // per group: value of its first product

  int GroupSize(int g) const;  // positions of group g (<= 4)
  // Value index of monomial `mask` (bits of the group's positions) of group g.
  int GroupMono(int g, unsigned mask) const {
    if (std::popcount(mask) == 1) return edabit::kGroupBits * g + std::countr_zero(mask);
    return group_prod[static_cast<std::size_t>(g)] + edabit::MaskIndex(mask);
  }
  int SuperMono(int q, int i) const {
    const SuperNode& s = supers[static_cast<std::size_t>(q)];
    return i < s.vars ? super_base[static_cast<std::size_t>(q)] + i
                      : super_prod[static_cast<std::size_t>(q)] + i - s.vars;
  }
  // Malicious row words.
  std::size_t MacWord(int value) const {
    return static_cast<std::size_t>(num_binary) + static_cast<std::size_t>(value);
  }
  std::size_t RWord() const { return 2 * static_cast<std::size_t>(num_binary); }
  std::size_t RMacWord() const { return RWord() + 2; }
  std::size_t MonoWord(int i) const { return RWord() + 4 + 4 * static_cast<std::size_t>(i); }
  std::size_t RowWords() const { return MonoWord(static_cast<int>(root.monos.size())); }
  // Semi-honest unit (64 items) words.
  std::size_t SemiRWord() const { return static_cast<std::size_t>(num_binary); }
  std::size_t SemiMonoWord(int i) const {
    return SemiRWord() + 64 + 64 * static_cast<std::size_t>(i);
  }
  std::size_t SemiUnitWords() const { return SemiMonoWord(static_cast<int>(root.monos.size())); }
};

// The layout for G groups (kMinGroups <= G <= kMaxGroups; built once, thread-safe).
const LtzLayout& LtzLayoutFor(int groups);

// Super-node sizes, bottom to top, for G groups: chosen to make the dealer's corrections
// smallest with at most 3 rounds (docs/comparison.md has the table).
std::vector<int> SuperSizes(int groups);

// Dealer bytes per comparison tuple: what the last party receives as corrections
// (determined words) and the words every party holds, per item.
struct LtzMaterial {
  double correction_bytes = 0;
  double party_bytes = 0;
};
LtzMaterial LtzMaterialPerItem(int groups, bool malicious);

}  // namespace mpcache::mpc::ltz
