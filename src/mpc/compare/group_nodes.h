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

// ---- semi-honest: bitsliced polynomial arithmetic with public per-element coefficients ----

// A GF(2) polynomial in the r bits of one group: coef[S] is the bit vector of the coefficient
// of the monomial prod_{t in S} r_{base+t}.
struct Poly {
  std::array<PublicBits, 16> coef;
  std::array<bool, 16> nz{};
};

inline Poly PolyConstant(const PublicBits& c, unsigned mask) {
  Poly p;
  p.coef[mask] = c;
  p.nz[mask] = true;
  return p;
}

inline void PolyXorInto(Poly& a, const Poly& b) {
  for (unsigned s = 0; s < 16; ++s) {
    if (!b.nz[s]) continue;
    if (!a.nz[s]) {
      a.coef[s] = b.coef[s];
      a.nz[s] = true;
      continue;
    }
    for (std::size_t w = 0; w < a.coef[s].w.size(); ++w) a.coef[s].w[w] ^= b.coef[s].w[w];
  }
}

// Product over boolean variables: m_S m_T = m_{S | T}.
inline Poly PolyTimes(const Poly& a, const Poly& b, std::size_t n) {
  Poly out;
  for (unsigned s = 0; s < 16; ++s) {
    if (!a.nz[s]) continue;
    for (unsigned t = 0; t < 16; ++t) {
      if (!b.nz[t]) continue;
      PublicBits& o = out.coef[s | t];
      if (!out.nz[s | t]) {
        o = PublicBits(n);
        out.nz[s | t] = true;
      }
      for (std::size_t w = 0; w < o.w.size(); ++w) o.w[w] ^= a.coef[s].w[w] & b.coef[t].w[w];
    }
  }
  return out;
}

// sum_S coef_S [m_S] with [m_{}] = 1 and mono(S) the shares of m_S (S != 0).
template <typename P, typename Mono>
BitShares<P> PolyEvaluate(const BitKey& key, const Poly& p, Mono&& mono, std::size_t n) {
  BitShares<P> acc(n);
  for (unsigned s = 1; s < 16; ++s) {
    if (!p.nz[s]) continue;
    const BitShares<P>& m = mono(s);
    const auto& c = p.coef[s].w;
    for (std::size_t w = 0; w < acc.v.size(); ++w) acc.v[w] ^= m.v[w] & c[w];
  }
  if (p.nz[0]) XorPublicInPlace(key, acc, p.coef[0]);
  return acc;
}

// The (lt, eq) of group g of the low `low` positions (semi-honest), with cb[j] = bit j of c
// (bitsliced) and mono(S) the shares of the product of the group's r bits in S.
template <typename P, typename Mono>
Node<P> GroupNodeBitsliced(const BitKey& key, Mono&& mono, const std::vector<PublicBits>& cb, int g,
                           int low, std::size_t n) {
  PublicBits ones(n);
  for (auto& w : ones.w) w = ~std::uint64_t{0};
  const int base = edabit::kGroupBits * g;
  const int size = GroupSizeAt(g, low);
  Poly lt, eq;
  for (int t = 0; t < size; ++t) {
    PublicBits nc = cb[static_cast<std::size_t>(base) + static_cast<std::size_t>(t)];
    for (auto& w : nc.w) w = ~w;
    const unsigned bit = 1u << t;
    Poly lt_t = PolyConstant(nc, bit);  // r_t & ~c_t
    Poly eq_t = PolyConstant(nc, 0);    // r_t ^ ~c_t
    PolyXorInto(eq_t, PolyConstant(ones, bit));
    if (t == 0) {
      lt = std::move(lt_t);
      eq = std::move(eq_t);
      continue;
    }
    Poly next_lt = PolyTimes(eq_t, lt, n);
    PolyXorInto(next_lt, lt_t);
    if (g > 0) eq = PolyTimes(eq_t, eq, n);
    lt = std::move(next_lt);
  }
  Node<P> node;
  node.lt = PolyEvaluate<P>(key, lt, mono, n);
  if (g > 0) {
    node.eq = PolyEvaluate<P>(key, eq, mono, n);
    node.has_eq = true;
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

// ---- malicious: the same polynomials as sets of monomials, evaluated item by item ----

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
