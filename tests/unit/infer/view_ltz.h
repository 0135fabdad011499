// Comparison tuples (mpc/compare/ltz_layout.h) in the view tests: a tuple carries both the
// comparison's r (its edaBit: [r], r's bits, the group products; these decide the
// comparison tree's inner bits, so the exact family keeps them fixed) and its masks (the
// combination round's and the root's masks, their products, the root's arithmetic
// monomials: free masks, which the exact family varies). One dealer item holds both, so
// "burning" tuples would change r too; instead run k of the exact family moves every mask
// of every tuple by a public pseudo-random shift delta (the same at every party): s -> s ^
// delta, and each product of masks is re-expanded over the products of its subsets (binary:
// prod (s_v ^ d_v) = XOR_T s_T; arithmetic: prod (d_v + (1 - 2 d_v) rho_v)), which is a
// local linear map of the shares with public coefficients, so the tuple stays consistent
// (MACs included) and only its masks change. Mutations (Mutation::part): the r part or the
// masks part of an element zeroed or copied from another element, or one mask zeroed with
// every monomial that contains it.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <map>
#include <vector>

#include "common/prg.h"
#include "mpc/compare/bit_preprocessing.h"
#include "mpc/compare/ltz_layout.h"

namespace mpcache::infer::viewtest {

inline constexpr int kLtzR = -2;      // Mutation::part: [r], r's bits, the group products
inline constexpr int kLtzMasks = -3;  // the masks, their products, the root's monomials

// This party's keys, for adding public constants (the shift's constant terms).
struct LtzKeys {
  int party = 0;
  std::uint64_t beta = 0;  // binary MAC key share
  mpc::u128 alpha = 0;     // arithmetic MAC key share
};

// Element access of a comparison tuple: binary value v, root monomial k, r.
template <typename P>
struct LtzElem {
  mpc::LtzTuples<P>& t;
  const mpc::ltz::LtzLayout& l;
  std::size_t e;

  std::pair<bool, std::uint64_t> Bin(int v) const {
    if constexpr (P::kMalicious) {
      const std::uint64_t* row = t.rows.rows[e];
      return {(row[v] & 1) != 0, row[l.MacWord(v)]};
    } else {
      return {((t.bin[static_cast<std::size_t>(v)].v[e / 64] >> (e % 64)) & 1) != 0, 0};
    }
  }
  void SetBin(int v, std::pair<bool, std::uint64_t> x) {
    if constexpr (P::kMalicious) {
      std::uint64_t* row = t.rows.rows[e];
      row[v] = x.first ? 1 : 0;
      row[l.MacWord(v)] = x.second;
    } else {
      std::uint64_t& w = t.bin[static_cast<std::size_t>(v)].v[e / 64];
      const std::uint64_t b = std::uint64_t{1} << (e % 64);
      w = x.first ? (w | b) : (w & ~b);
    }
  }
  std::pair<mpc::u128, mpc::u128> Mono(std::size_t k) const {
    if constexpr (P::kMalicious) {
      const std::uint64_t* w = t.rows.rows[e] + l.MonoWord(static_cast<int>(k));
      return {(mpc::u128{w[1]} << 64) | w[0], (mpc::u128{w[3]} << 64) | w[2]};
    } else {
      return {t.mono[k].v[e], 0};
    }
  }
  void SetMono(std::size_t k, std::pair<mpc::u128, mpc::u128> x) {
    if constexpr (P::kMalicious) {
      std::uint64_t* w = t.rows.rows[e] + l.MonoWord(static_cast<int>(k));
      w[0] = static_cast<std::uint64_t>(x.first);
      w[1] = static_cast<std::uint64_t>(x.first >> 64);
      w[2] = static_cast<std::uint64_t>(x.second);
      w[3] = static_cast<std::uint64_t>(x.second >> 64);
    } else {
      t.mono[k].v[e] = static_cast<std::uint64_t>(x.first);
    }
  }
  std::pair<mpc::u128, mpc::u128> R() const { return {t.r.v[e], P::kMalicious ? t.r.m[e] : 0}; }
  void SetR(std::pair<mpc::u128, mpc::u128> x) {
    t.r.v[e] = static_cast<typename P::Word>(x.first);
    if constexpr (P::kMalicious) t.r.m[e] = x.second;
  }
};

inline int LtzMaskProducts(const mpc::ltz::LtzLayout& l) {
  int n = 0;
  for (const auto& q : l.supers) n += static_cast<int>(q.monos.size()) - q.vars;
  return n;
}

// Binary values of a part.
inline std::vector<int> LtzValues(const mpc::ltz::LtzLayout& l, int part) {
  std::vector<int> out;
  const int mask_prods = l.num_binary - LtzMaskProducts(l);
  if (part == kLtzR) {
    for (int v = 0; v < l.r_bits; ++v) out.push_back(v);
    for (int v = l.eda_products; v < mask_prods; ++v) out.push_back(v);
  } else {
    for (int v = l.super_fresh; v < l.free_values; ++v) out.push_back(v);
    for (int v = mask_prods; v < l.num_binary; ++v) out.push_back(v);
  }
  return out;
}

// One element's part, saved (for a reuse).
struct LtzSaved {
  std::vector<std::pair<bool, std::uint64_t>> bin;
  std::vector<std::pair<mpc::u128, mpc::u128>> arith;  // the root's monomials, or r
};

template <typename P>
LtzSaved LtzSave(const LtzElem<P>& x, int part) {
  LtzSaved s;
  for (int v : LtzValues(x.l, part)) s.bin.push_back(x.Bin(v));
  if (part == kLtzR) {
    s.arith.push_back(x.R());
  } else {
    for (std::size_t k = 0; k < x.l.root.monos.size(); ++k) s.arith.push_back(x.Mono(k));
  }
  return s;
}

// Writes `s` (or zeros: s == nullptr) over one element's part.
template <typename P>
void LtzRestore(LtzElem<P>& x, int part, const LtzSaved* s) {
  const std::vector<int> values = LtzValues(x.l, part);
  for (std::size_t i = 0; i < values.size(); ++i) {
    x.SetBin(values[i], s != nullptr ? s->bin.at(i) : std::pair<bool, std::uint64_t>{false, 0});
  }
  const std::pair<mpc::u128, mpc::u128> zero{0, 0};
  if (part == kLtzR) {
    x.SetR(s != nullptr ? s->arith.at(0) : zero);
  } else {
    for (std::size_t k = 0; k < x.l.root.monos.size(); ++k) {
      x.SetMono(k, s != nullptr ? s->arith.at(k) : zero);
    }
  }
}

// Zeroes mask value v (a combination-round or root mask) and every monomial containing it.
template <typename P>
void LtzZeroMask(LtzElem<P>& x, int v) {
  const mpc::ltz::LtzLayout& l = x.l;
  const std::pair<bool, std::uint64_t> zero{false, 0};
  if (v >= l.root_masks && v < l.root_masks + l.root.vars) {
    x.SetBin(v, zero);
    const std::uint32_t bit = 1u << (v - l.root_masks);
    for (std::size_t k = 0; k < l.root.monos.size(); ++k) {
      if ((l.root.monos[k] & bit) != 0) x.SetMono(k, {0, 0});
    }
    return;
  }
  for (std::size_t q = 0; q < l.supers.size(); ++q) {
    const auto& s = l.supers[q];
    const int base = l.super_base[q];
    if (s.k < 2 || v < base || v >= base + s.vars) continue;
    const std::uint32_t bit = s.monos[static_cast<std::size_t>(v - base)];
    for (std::size_t j = 0; j < s.monos.size(); ++j) {
      if ((s.monos[j] & bit) != 0)
        x.SetBin(l.SuperMono(static_cast<int>(q), static_cast<int>(j)), zero);
    }
  }
}

// Moves every mask of one element by the shift `delta` (bit i: the i-th mask of the
// combination round, then the root's), keeping the tuple consistent (header comment).
template <typename P>
void LtzShift(LtzElem<P>& x, std::uint64_t delta, const LtzKeys& keys) {
  const mpc::ltz::LtzLayout& l = x.l;
  const std::pair<bool, std::uint64_t> one{keys.party == 0, keys.beta};  // the public 1
  int shift_bit = 0;
  for (std::size_t q = 0; q < l.supers.size(); ++q) {
    const auto& s = l.supers[q];
    if (s.k < 2) continue;
    std::uint32_t d = 0;  // shifted variables (bitmask over the super-node's variables)
    for (int i = 0; i < s.vars; ++i, ++shift_bit) {
      if (((delta >> shift_bit) & 1) != 0) d |= s.monos[static_cast<std::size_t>(i)];
    }
    std::map<std::uint32_t, std::pair<bool, std::uint64_t>> old;
    for (std::size_t j = 0; j < s.monos.size(); ++j) {
      old[s.monos[j]] = x.Bin(l.SuperMono(static_cast<int>(q), static_cast<int>(j)));
    }
    old[0] = one;
    for (std::size_t j = 0; j < s.monos.size(); ++j) {
      const std::uint32_t m = s.monos[j], md = m & d;
      std::pair<bool, std::uint64_t> acc = old[m];
      for (std::uint32_t sub = md; sub != 0; sub = (sub - 1) & md) {
        const auto& o = old.at(m & ~sub);
        acc.first = acc.first != o.first;
        acc.second ^= o.second;
      }
      x.SetBin(l.SuperMono(static_cast<int>(q), static_cast<int>(j)), acc);
    }
  }
  // The root: binary masks s -> s ^ d, arithmetic monomials prod (d + (1 - 2d) rho).
  std::uint32_t d = 0;
  for (int v = 0; v < l.root.vars; ++v, ++shift_bit) {
    if (((delta >> shift_bit) & 1) == 0) continue;
    d |= 1u << v;
    auto b = x.Bin(l.root_masks + v);
    x.SetBin(l.root_masks + v, {b.first != one.first, b.second ^ one.second});
  }
  std::map<std::uint32_t, std::pair<mpc::u128, mpc::u128>> old;
  for (std::size_t k = 0; k < l.root.monos.size(); ++k) old[l.root.monos[k]] = x.Mono(k);
  old[0] = {keys.party == 0 ? 1 : 0, keys.alpha};
  for (std::size_t k = 0; k < l.root.monos.size(); ++k) {
    const std::uint32_t m = l.root.monos[k], md = m & d;
    std::pair<mpc::u128, mpc::u128> acc{0, 0};
    for (std::uint32_t sub = md;; sub = (sub - 1) & md) {  // S = shifted vars taken as d = 1
      const auto& o = old.at(m & ~sub);
      const bool neg = (std::popcount(md & ~sub) & 1) != 0;  // (-1)^|T|, T = md \ S
      acc.first += neg ? 0 - o.first : o.first;
      acc.second += neg ? 0 - o.second : o.second;
      if (sub == 0) break;
    }
    x.SetMono(k, acc);
  }
}

// The shift of element e of the `call`-th tuple request in run `burn` (0: none).
inline std::uint64_t LtzDelta(int burn, int call, std::size_t e) {
  if (burn == 0) return 0;
  const Seed run = TestSeed(0x5417000000ull + static_cast<std::uint64_t>(burn) * 1000003u +
                            static_cast<std::uint64_t>(call));
  return Prg(DeriveSeed(run, e)).NextU64();
}

}  // namespace mpcache::infer::viewtest
