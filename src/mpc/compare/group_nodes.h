// Internal to compare.cc / msb_bits.cc: the comparison tree's first two levels, made
// locally once c = x + r is public. Group g covers positions 4g .. 4g+3 of the low `low`
// positions (cut at `low`); with c public its (lt, eq) is a GF(2) polynomial in the group's
// r bits with public coefficients, i.e. a public combination of the dealer's ANDs of subsets
// of those bits (edabit_layout.h for an edaBit, ltz_layout.h for a comparison tuple).
// Per position: lt_t = r_t & ~c_t, eq_t = ~(r_t ^ c_t); position t above the range so far:
// (lt, eq) <- (lt_t ^ eq_t lt, eq_t eq). Group 0 (holding bit 0) has no eq.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <vector>

#include "mpc/compare/bit_preprocessing.h"

namespace mpcache::mpc::cmp_detail {

// A node of the comparison tree over a range of bit positions.
template <typename P>
struct Node {
  BitShares<P> lt, eq;
  bool has_eq = false;
};

inline int GroupSizeAt(int g, int low) {
  return std::min(edabit::kGroupBits, low - edabit::kGroupBits * g);
}

// ---- the polynomials as sets of monomials, per group size and c (both models) ----

// Bit S of a PolySet: the monomial prod_{t in S} r_{base+t} is present (S = 0: the constant).
using PolySet = std::uint32_t;

constexpr PolySet PolySetTimes(PolySet a, PolySet b) {
  PolySet out = 0;
  for (unsigned s = 0; s < 16; ++s) {
    if (((a >> s) & 1) == 0) continue;
    for (unsigned t = 0; t < 16; ++t) {
      if (((b >> t) & 1) != 0) out ^= PolySet{1} << (s | t);
    }
  }
  return out;
}

struct GroupPolys {
  PolySet lt = 0, eq = 0;
};

constexpr GroupPolys GroupPolysFor(int size, unsigned c) {
  GroupPolys p;
  for (int t = 0; t < size; ++t) {
    const bool ct = ((c >> t) & 1) != 0;
    const PolySet rt = PolySet{1} << (1u << t);
    const PolySet lt_t = ct ? 0 : rt;                 // r_t & ~c_t
    const PolySet eq_t = rt ^ (ct ? 0 : PolySet{1});  // r_t ^ ~c_t
    if (t == 0) {
      p = {lt_t, eq_t};
      continue;
    }
    p.lt = lt_t ^ PolySetTimes(eq_t, p.lt);  // position t is above the range so far
    p.eq = PolySetTimes(eq_t, p.eq);
  }
  return p;
}

struct GroupTable {
  GroupPolys at[5][16]{};  // [size][c]
};
constexpr GroupTable MakeGroupTable() {
  GroupTable t;
  for (int size = 1; size <= 4; ++size) {
    for (unsigned c = 0; c < (1u << size); ++c) t.at[size][c] = GroupPolysFor(size, c);
  }
  return t;
}
inline constexpr GroupTable kGroupTable = MakeGroupTable();

// The monomials a group of `size` positions can hold whatever c is: those of c = 0 (every
// factor ~c_t is 1, and products of distinct variables never cancel), a superset of every
// c's (checked below).
constexpr GroupPolys GroupMonosFor(int size) {
  return kGroupTable.at[size][0];
}
constexpr bool EveryCsMonosAreInCZeros() {
  for (int size = 1; size <= 4; ++size) {
    const GroupPolys all = GroupMonosFor(size);
    for (unsigned c = 0; c < (1u << size); ++c) {
      const GroupPolys p = kGroupTable.at[size][c];
      if ((p.lt & ~all.lt) != 0 || (p.eq & ~all.eq) != 0) return false;
    }
  }
  return true;
}
static_assert(EveryCsMonosAreInCZeros());

// ---- semi-honest: bitsliced, one word (64 elements) at a time ----

// The group's (lt, eq) words for a group of kSize positions: c[t] = bit t of c (bitsliced),
// m[S] the shares of monomial S. For each word of 64 elements the coefficients (bit vectors
// of c) are built in registers and evaluated against the monomials' shares at once.
template <int kSize, bool kEq>
void GroupNodeWords(const std::array<const std::uint64_t*, edabit::kGroupBits>& c,
                    const std::array<const std::uint64_t*, 16>& m, bool party0, std::size_t words,
                    std::uint64_t* out_lt, std::uint64_t* out_eq) {
  constexpr GroupPolys kMonos = GroupMonosFor(kSize);
  for (std::size_t w = 0; w < words; ++w) {
    std::array<std::uint64_t, 16> lt{}, eq{};
    std::uint64_t nc = ~c[0][w];
    lt[1] = nc;
    eq[0] = nc;
    eq[1] = ~std::uint64_t{0};
#pragma GCC unroll 4
    for (int t = 1; t < kSize; ++t) {
      const unsigned bit = 1u << t;
      nc = ~c[static_cast<std::size_t>(t)][w];
      // Monomials S below t: (S, coef nc & x) and (S | t, coef x), from the old x.
#pragma GCC unroll 16
      for (unsigned s = 0; s < bit; ++s) {
        const std::uint64_t l = lt[s], e = eq[s];
        lt[s] = nc & l;
        lt[s | bit] = l;
        if constexpr (kEq) {
          eq[s] = nc & e;
          eq[s | bit] = e;
        }
      }
      lt[bit] ^= nc;
    }
    std::uint64_t acc_lt = 0, acc_eq = party0 ? eq[0] : 0;  // lt has no constant term
#pragma GCC unroll 16
    for (unsigned s = 1; s < 16; ++s) {
      if (((kMonos.lt >> s) & 1) != 0) acc_lt ^= m[s][w] & lt[s];
      if constexpr (kEq) {
        if (((kMonos.eq >> s) & 1) != 0) acc_eq ^= m[s][w] & eq[s];
      }
    }
    out_lt[w] = acc_lt;
    if constexpr (kEq) out_eq[w] = acc_eq;
  }
}

// The (lt, eq) of group g of the low `low` positions (semi-honest), with cb[j] = bit j of c
// (bitsliced) and mono(S) the shares of the product of the group's r bits in S (the GF(2)
// polynomials of the header, coefficients public per element). Group 0 has no eq.
template <typename P, typename Mono>
Node<P> GroupNodeBitsliced(const BitKey& key, Mono&& mono, const std::vector<PublicBits>& cb, int g,
                           int low, std::size_t n) {
  static_assert(!P::kMalicious, "malicious group nodes go item by item (GroupNodesFromRows)");
  const std::size_t base =
      static_cast<std::size_t>(edabit::kGroupBits) * static_cast<std::size_t>(g);
  const int size = GroupSizeAt(g, low);
  const bool has_eq = g > 0;
  const GroupPolys monos = GroupMonosFor(size);
  std::array<const std::uint64_t*, edabit::kGroupBits> c{};
  for (int t = 0; t < size; ++t)
    c[static_cast<std::size_t>(t)] = cb[base + static_cast<std::size_t>(t)].w.data();
  std::array<const std::uint64_t*, 16> m{};
  for (unsigned s = 1; s < 16; ++s) {
    if ((((monos.lt | (has_eq ? monos.eq : 0)) >> s) & 1) != 0) m[s] = mono(s).v.data();
  }
  Node<P> node;
  node.lt = BitShares<P>(n);
  if (has_eq) {
    node.eq = BitShares<P>(n);
    node.has_eq = true;
  }
  const bool party0 = key.party == 0;
  const std::size_t words = WordsFor(n);
  std::uint64_t* lt = node.lt.v.data();
  std::uint64_t* eq = node.eq.v.data();
  const auto run = [&]<int kSize>() {
    if (has_eq) {
      GroupNodeWords<kSize, true>(c, m, party0, words, lt, eq);
    } else {
      GroupNodeWords<kSize, false>(c, m, party0, words, lt, eq);
    }
  };
  switch (size) {
    case 1:
      run.template operator()<1>();
      break;
    case 2:
      run.template operator()<2>();
      break;
    case 3:
      run.template operator()<3>();
      break;
    default:
      run.template operator()<4>();
      break;
  }
  return node;
}

// c bits 0..63 of each element, bitsliced (cb[j] = bit j of every c).
inline std::vector<PublicBits> BitslicedC(const std::vector<std::uint64_t>& c) {
  const std::size_t n = c.size();
  std::vector<PublicBits> cb(64, PublicBits(n));
  std::array<std::uint64_t, 64> block{};
  for (std::size_t b = 0; b < WordsFor(n); ++b) {
    const std::size_t len = std::min<std::size_t>(64, n - 64 * b);
    std::copy(c.begin() + static_cast<std::ptrdiff_t>(64 * b),
              c.begin() + static_cast<std::ptrdiff_t>(64 * b + len), block.begin());
    std::fill(block.begin() + static_cast<std::ptrdiff_t>(len), block.end(), 0);
    Transpose64(block.data());
    for (std::size_t j = 0; j < 64; ++j) cb[j].w[b] = block[j];
  }
  return cb;
}

// ---- malicious: the polynomials' monomial sets (above), evaluated item by item ----

// Where an item-major row keeps its binary values: word[g][S] is the row word of the
// monomial S of group g (value in bit 0), its MAC at word + mac_offset.
struct RowMap {
  std::vector<std::array<std::size_t, 16>> word;
  std::size_t mac_offset = 0;
  std::size_t r_top = 0;  // the word of r's bit `low` (the comparison's top bit)
};

// Malicious: the group nodes of the low `low` positions item by item from the rows: lt = XOR
// of the monomials' words that the group's polynomial for this item's c bits contains; the
// constant term (1) adds the public 1 (party 0's value, every party's beta). Fills r_top in
// the same pass. (Software prefetching of the next rows was tried: slower.)
template <typename P>
std::vector<Node<P>> GroupNodesFromRows(const BitKey& key, const EdaRows& rows,
                                        const std::vector<std::uint64_t>& c, int low,
                                        const RowMap& map, BitShares<P>& r_top) {
  const std::size_t n = c.size();
  const int groups = (low + edabit::kGroupBits - 1) / edabit::kGroupBits;
  std::vector<Node<P>> nodes(static_cast<std::size_t>(groups));
  std::vector<int> size(static_cast<std::size_t>(groups));
  for (int g = 0; g < groups; ++g) {
    size[static_cast<std::size_t>(g)] = GroupSizeAt(g, low);
    Node<P>& node = nodes[static_cast<std::size_t>(g)];
    node.lt = BitShares<P>(n);
    if (g > 0) {
      node.eq = BitShares<P>(n);
      node.has_eq = true;
    }
  }
  const bool p0 = key.party == 0;
  const std::uint64_t beta = key.beta;
  const std::size_t mo = map.mac_offset;
  r_top = BitShares<P>(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t* row = rows.rows[i];
    r_top.v[i] = row[map.r_top] & 1;
    r_top.m[i] = row[map.r_top + mo];
    for (int g = 0; g < groups; ++g) {
      const auto gi = static_cast<std::size_t>(g);
      const unsigned cg =
          static_cast<unsigned>(c[i] >> (edabit::kGroupBits * g)) & ((1u << size[gi]) - 1);
      const GroupPolys& poly = kGroupTable.at[size[gi]][cg];
      const auto& word = map.word[gi];
      auto eval = [&](PolySet set, BitShares<P>& out) {
        std::uint64_t v = 0, m = 0;
        for (PolySet rest = set & ~PolySet{1}; rest != 0; rest &= rest - 1) {
          const std::size_t w = word[static_cast<unsigned>(std::countr_zero(rest))];
          v ^= row[w];
          m ^= row[w + mo];
        }
        if ((set & 1) != 0) {
          if (p0) v ^= 1;
          m ^= beta;
        }
        out.v[i] = v & 1;
        out.m[i] = m;
      };
      eval(poly.lt, nodes[gi].lt);
      if (g > 0) eval(poly.eq, nodes[gi].eq);
    }
  }
  return nodes;
}

}  // namespace mpcache::mpc::cmp_detail
