#include "mpc/compare/ltz_layout.h"

#include <algorithm>
#include <array>
#include <bit>
#include <map>
#include <memory>
#include <mutex>

namespace mpcache::mpc::ltz {

namespace {

// Every subset of every set, the empty one excluded, singletons first (in bit order), then
// by degree and value.
std::vector<std::uint32_t> DownClosure(const std::vector<std::uint32_t>& sets) {
  std::vector<std::uint32_t> out;
  for (const std::uint32_t s : sets) {
    for (std::uint32_t sub = s; sub != 0; sub = (sub - 1) & s) out.push_back(sub);
  }
  std::sort(out.begin(), out.end(), [](std::uint32_t a, std::uint32_t b) {
    const int pa = std::popcount(a), pb = std::popcount(b);
    return pa != pb ? pa < pb : a < b;
  });
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// GF(2) polynomials over boolean variables as characteristic vectors of their monomials.
using Gf2Poly = std::vector<std::uint8_t>;

Gf2Poly Gf2Times(const Gf2Poly& a, const Gf2Poly& b) {
  std::vector<std::size_t> bs;
  for (std::size_t y = 0; y < b.size(); ++y) {
    if (b[y] != 0) bs.push_back(y);
  }
  Gf2Poly out(a.size(), 0);
  for (std::size_t x = 0; x < a.size(); ++x) {
    if (a[x] == 0) continue;
    for (const std::size_t y : bs) out[x | y] ^= 1;
  }
  return out;
}

// mask_var ^ [opened]: the variable's value as a polynomial in its mask.
Gf2Poly Gf2Masked(std::size_t size, std::uint32_t mask_var, bool opened) {
  Gf2Poly p(size, 0);
  p[mask_var] = 1;
  if (opened) p[0] ^= 1;
  return p;
}

// Per monomial i (and i = monos, the constant term): the algebraic normal form of its
// coefficient as a function of the opened pattern p (`bits` bits), from the truth tables
// set[p] / one[p] by the Moebius transform.
std::vector<std::vector<std::uint32_t>> Anf(const std::vector<std::uint64_t>& set,
                                            const std::vector<std::uint8_t>& one, std::size_t monos,
                                            int bits) {
  const std::size_t patterns = std::size_t{1} << bits;
  std::vector<std::vector<std::uint32_t>> out(monos + 1);
  std::vector<std::uint8_t> g(patterns);
  for (std::size_t i = 0; i <= monos; ++i) {
    for (std::size_t p = 0; p < patterns; ++p) {
      g[p] = i < monos ? static_cast<std::uint8_t>((set[p] >> i) & 1) : one[p];
    }
    for (int b = 0; b < bits; ++b) {
      for (std::size_t p = 0; p < patterns; ++p) {
        if (((p >> b) & 1) != 0) g[p] ^= g[p ^ (std::size_t{1} << b)];
      }
    }
    for (std::size_t p = 0; p < patterns; ++p) {
      if (g[p] != 0) out[i].push_back(static_cast<std::uint32_t>(p));
    }
  }
  return out;
}

SuperNode MakeSuper(int first, int k, bool bottom) {
  SuperNode s;
  s.first = first;
  s.k = k;
  s.bottom = bottom;
  if (k < 2) return s;
  const auto sbit = [](int j) { return std::uint32_t{1} << (2 * j); };
  const auto tbit = [](int j) { return std::uint32_t{1} << (2 * j + 1); };
  std::vector<std::uint32_t> sets;
  for (int j = 0; j < k; ++j) {
    std::uint32_t term = sbit(j);  // lt_j prod_{i > j} eq_i
    for (int i = j + 1; i < k; ++i) term |= tbit(i);
    sets.push_back(term);
  }
  if (!bottom) {
    std::uint32_t all = 0;
    for (int i = 0; i < k; ++i) all |= tbit(i);
    sets.push_back(all);
  }
  s.monos = DownClosure(sets);
  s.vars = 2 * k - (bottom ? 1 : 0);
  const std::size_t patterns = std::size_t{1} << (2 * k);
  std::vector<int> index(patterns, -1);
  for (std::size_t i = 0; i < s.monos.size(); ++i) index[s.monos[i]] = static_cast<int>(i);
  s.lt.assign(patterns, 0);
  s.eq.assign(patterns, 0);
  s.lt_one.assign(patterns, 0);
  s.eq_one.assign(patterns, 0);
  for (std::size_t p = 0; p < patterns; ++p) {
    Gf2Poly lt, eq;
    for (int j = 0; j < k; ++j) {
      const Gf2Poly lt_j = Gf2Masked(patterns, sbit(j), ((p >> (2 * j)) & 1) != 0);
      if (bottom && j == 0) {
        lt = lt_j;
        continue;
      }
      const Gf2Poly eq_j = Gf2Masked(patterns, tbit(j), ((p >> (2 * j + 1)) & 1) != 0);
      if (j == 0) {
        lt = lt_j;
        eq = eq_j;
        continue;
      }
      // Group j is above the range so far: (lt, eq) <- (lt_j ^ eq_j lt, eq_j eq).
      Gf2Poly next = Gf2Times(eq_j, lt);
      for (std::size_t x = 0; x < patterns; ++x) next[x] ^= lt_j[x];
      lt = std::move(next);
      if (!bottom) eq = Gf2Times(eq_j, eq);
    }
    const auto to_set = [&](const Gf2Poly& poly, std::uint64_t& set, std::uint8_t& one) {
      for (std::size_t x = 1; x < patterns; ++x) {
        if (poly[x] != 0) set |= std::uint64_t{1} << index[x];
      }
      one = poly[0];
    };
    to_set(lt, s.lt[p], s.lt_one[p]);
    if (!bottom) to_set(eq, s.eq[p], s.eq_one[p]);
  }
  s.lt_anf = Anf(s.lt, s.lt_one, s.monos.size(), 2 * k);
  if (!bottom) s.eq_anf = Anf(s.eq, s.eq_one, s.monos.size(), 2 * k);
  std::vector<bool> named(patterns, false);
  for (const auto* anf : {&s.lt_anf, &s.eq_anf}) {
    for (const std::vector<std::uint32_t>& terms : *anf) {
      for (const std::uint32_t term : terms) {
        for (std::uint32_t x = term; x != 0; x &= x - 1) named[x] = true;
      }
    }
  }
  for (std::uint32_t x = 1; x < patterns; ++x) {
    if (named[x]) s.anf_terms.push_back(x);
  }
  return s;
}

// Polynomials over Z_2^64 in boolean variables: monomial bitmask -> coefficient.
using ZPoly = std::map<std::uint32_t, std::uint64_t>;

ZPoly ZTimes(const ZPoly& a, const ZPoly& b) {
  ZPoly out;
  for (const auto& [x, cx] : a) {
    for (const auto& [y, cy] : b) out[x | y] += cx * cy;
  }
  return out;
}

RootMonos MakeRoot(int m) {
  RootMonos r;
  r.m = m;
  r.vars = 2 * m - 1;
  std::vector<std::uint32_t> sets;
  for (int q = 0; q + 1 < m; ++q) {
    std::uint32_t term = (1u << r.VarLt(m - 1)) | (1u << r.VarLt(q));  // u lt_q prod eq_p
    for (int p = q + 1; p < m; ++p) term |= 1u << r.VarEq(p);
    sets.push_back(term);
  }
  r.monos = DownClosure(sets);
  const std::size_t per = r.monos.size() + 1;
  const std::size_t patterns = std::size_t{1} << r.vars;
  r.coef.assign(patterns * per, 0);
  for (std::size_t p = 0; p < patterns; ++p) {
    // Variable v = e + (1 - 2e) rho_v.
    const auto var = [&](int v) {
      const std::uint64_t e = (p >> v) & 1;
      return ZPoly{{0, e}, {1u << v, 1 - 2 * e}};
    };
    ZPoly sum_r;  // R = sum_q lt_q prod_{p > q} eq_p (mutually exclusive terms)
    for (int q = 0; q + 1 < m; ++q) {
      ZPoly term = var(r.VarLt(q));
      for (int up = q + 1; up < m; ++up) term = ZTimes(term, var(r.VarEq(up)));
      for (const auto& [x, c] : term) sum_r[x] += c;
    }
    const ZPoly u = var(r.VarLt(m - 1));
    ZPoly f = ZTimes(u, sum_r);  // u + R - 2 u R
    for (auto& [x, c] : f) c = 0 - 2 * c;
    for (const auto& [x, c] : u) f[x] += c;
    for (const auto& [x, c] : sum_r) f[x] += c;
    for (const auto& [x, c] : f) {
      if (x == 0) {
        r.coef[p * per + per - 1] = c;
        continue;
      }
      const auto it =
          std::lower_bound(r.monos.begin(), r.monos.end(), x, [](std::uint32_t a, std::uint32_t b) {
            const int pa = std::popcount(a), pb = std::popcount(b);
            return pa != pb ? pa < pb : a < b;
          });
      r.coef[p * per + static_cast<std::size_t>(it - r.monos.begin())] = c;
    }
  }
  return r;
}

LtzLayout MakeLayout(int groups) {
  LtzLayout L;
  L.groups = groups;
  L.r_bits = std::min(64, edabit::kGroupBits * groups + 1);
  L.low_bits = std::min(edabit::kGroupBits * groups, edabit::kLowBits);
  int first = 0;
  for (const int k : SuperSizes(groups)) {
    L.supers.push_back(MakeSuper(first, k, first == 0));
    L.combine = L.combine || k >= 2;
    first += k;
  }
  L.root = MakeRoot(static_cast<int>(L.supers.size()));
  L.rounds = L.combine ? 3 : 2;
  int next = L.r_bits;
  L.super_fresh = next;
  for (const SuperNode& s : L.supers) {
    L.super_base.push_back(s.k >= 2 ? next : -1);
    next += s.vars;
    L.combine_bits += s.vars;
  }
  L.root_masks = next;
  next += L.root.vars;
  L.free_values = next;
  L.eda_products = next;
  for (int g = 0; g < groups; ++g) {
    L.group_prod.push_back(next);
    const int size = L.GroupSize(g);
    next += (1 << size) - 1 - size;
  }
  for (const SuperNode& s : L.supers) {
    L.super_prod.push_back(s.k >= 2 ? next : -1);
    next += static_cast<int>(s.monos.size()) - s.vars;
  }
  L.num_binary = next;
  return L;
}

}  // namespace

int LtzLayout::GroupSize(int g) const {
  return std::min(edabit::kGroupBits, low_bits - edabit::kGroupBits * g);
}

std::vector<int> SuperSizes(int groups) {
  // Cheapest partition by dealer corrections (docs/comparison.md): a super-node of k groups
  // costs ~2^(k+1) binary monomials, a root over m super-nodes 7 / 19 / 43 arithmetic ones
  // (m = 2 / 3 / 4). Up to 4 groups the root takes every group node: 2 rounds.
  static const std::array<std::vector<int>, kMaxGroups + 1> kSizes = {{
      {},
      {},
      {1, 1},
      {1, 1, 1},
      {1, 1, 1, 1},
      {3, 2},
      {3, 3},
      {4, 3},
      {4, 4},
      {3, 3, 3},
      {4, 3, 3},
      {4, 3, 4},
      {4, 4, 4},
      {5, 4, 4},
      {4, 3, 3, 4},
      {4, 3, 4, 4},
      {4, 4, 4, 4},
  }};
  if (groups < kMinGroups || groups > kMaxGroups) return {};
  return kSizes[static_cast<std::size_t>(groups)];
}

const LtzLayout& LtzLayoutFor(int groups) {
  static std::array<std::unique_ptr<LtzLayout>, kMaxGroups + 1> layouts;
  static std::once_flag once;
  std::call_once(once, [] {
    for (int g = kMinGroups; g <= kMaxGroups; ++g) {
      layouts[static_cast<std::size_t>(g)] = std::make_unique<LtzLayout>(MakeLayout(g));
    }
  });
  return *layouts[static_cast<std::size_t>(std::clamp(groups, kMinGroups, kMaxGroups))];
}

LtzMaterial LtzMaterialPerItem(int groups, bool malicious) {
  const LtzLayout& L = LtzLayoutFor(groups);
  LtzMaterial out;
  if (malicious) {
    out.party_bytes = 8.0 * static_cast<double>(L.RowWords());
    // Determined words in full, but the products' values (one bit each: preproc/bit_batch.h's
    // IsBitCorrection).
    const int values = L.num_binary - L.free_values;
    out.correction_bytes = 8.0 * static_cast<double>(L.RowWords() - L.free_values - values) +
                           static_cast<double>(values) / 8.0;
  } else {
    out.party_bytes = static_cast<double>(L.SemiUnitWords()) / 8.0;
    out.correction_bytes = static_cast<double>(L.SemiUnitWords() - L.free_values) / 8.0;
  }
  return out;
}

}  // namespace mpcache::mpc::ltz
