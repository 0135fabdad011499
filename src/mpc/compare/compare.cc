#include "mpc/compare/compare.h"

#include <algorithm>
#include <array>
#include <bit>
#include <string>
#include <type_traits>

#include "mpc/compare/group_nodes.h"
#include "mpc/compare/ltz_layout.h"

namespace mpcache::mpc {

LtzShape LtzShapeFor(int bits) {
  LtzShape s;
  if (bits < kMinCompareBits || bits > 64) return s;
  const ltz::LtzLayout& layout = ltz::LtzLayoutFor(ltz::GroupsFor(bits));
  s.groups = layout.groups;
  for (const ltz::SuperNode& q : layout.supers) s.supers.push_back(q.k);
  s.combine_bits = layout.combine_bits;
  s.root_bits = layout.root.vars;
  s.rounds = layout.rounds;
  return s;
}

int LtzRounds(int bits) {
  return LtzShapeFor(bits).rounds;
}

std::uint64_t LtzBytesPerPeer(std::uint64_t n, int bits, std::uint64_t open_bytes) {
  const LtzShape s = LtzShapeFor(bits);
  const auto packed = [n](int per_value) {
    return (static_cast<std::uint64_t>(per_value) * n + 7) / 8;
  };
  return open_bytes * n + packed(s.combine_bits) + packed(s.root_bits);
}

Status CheckCompareBits(int bits) {
  if (bits < kMinCompareBits || bits > 64) {
    return InvalidArgument("a comparison of " + std::to_string(bits) + "-bit values: need " +
                           std::to_string(kMinCompareBits) + "..64 bits");
  }
  return Status::Ok();
}

namespace {

using cmp_detail::Node;

// x ^= binary value v of every tuple (malicious: read from the rows in place).
template <typename P>
void XorValueInPlace(BitShares<P>& x, const LtzTuples<P>& t, const ltz::LtzLayout& layout, int v) {
  if constexpr (P::kMalicious) {
    const auto w = static_cast<std::size_t>(v);
    const std::size_t mw = layout.MacWord(v);
    for (std::size_t i = 0; i < x.n; ++i) {
      const std::uint64_t* row = t.rows.rows[i];
      x.v[i] ^= row[w] & 1;
      x.m[i] ^= row[mw];
    }
  } else {
    (void)layout;
    XorInPlace(x, t.bin[static_cast<std::size_t>(v)]);
  }
}

// Round 1's local part: the G group nodes (and r's bit `top`) from the tuples.
template <typename P>
std::vector<Node<P>> TupleGroupNodes(const BitKey& key, const LtzTuples<P>& t,
                                     const ltz::LtzLayout& layout,
                                     const std::vector<std::uint64_t>& c, int top,
                                     BitShares<P>& r_top) {
  const int groups = layout.groups;
  if constexpr (P::kMalicious) {
    cmp_detail::RowMap map;
    map.word.resize(static_cast<std::size_t>(groups));
    for (int g = 0; g < groups; ++g) {
      const int size = cmp_detail::GroupSizeAt(g, top);
      for (unsigned s = 1; s < (1u << size); ++s) {
        map.word[static_cast<std::size_t>(g)][s] = static_cast<std::size_t>(layout.GroupMono(g, s));
      }
    }
    map.mac_offset = static_cast<std::size_t>(layout.num_binary);
    map.r_top = static_cast<std::size_t>(top);
    return cmp_detail::GroupNodesFromRows<P>(key, t.rows, c, top, map, r_top);
  } else {
    const std::size_t n = t.size();
    const std::vector<PublicBits> cb = cmp_detail::BitslicedC(c);
    std::vector<Node<P>> nodes;
    nodes.reserve(static_cast<std::size_t>(groups));
    for (int g = 0; g < groups; ++g) {
      auto mono = [&](unsigned s) -> const BitShares<P>& {
        return t.bin[static_cast<std::size_t>(layout.GroupMono(g, s))];
      };
      nodes.push_back(cmp_detail::GroupNodeBitsliced<P>(key, mono, cb, g, top, n));
    }
    r_top = t.bin[static_cast<std::size_t>(top)];
    return nodes;
  }
}

// Bit of element i of an opened vector.
inline unsigned BitAt(const PublicBits& b, std::size_t i) {
  return static_cast<unsigned>((b.w[i / 64] >> (i % 64)) & 1);
}

// Super-node q's (lt, eq) after the combination round: `opened` holds its masked group
// bits from index `first` on, in its variables' order (lt_j, then eq_j unless absent).
template <typename P>
Node<P> CombineSuper(const BitKey& key, const LtzTuples<P>& t, const ltz::LtzLayout& layout, int q,
                     const std::vector<PublicBits>& opened, std::size_t first) {
  const ltz::SuperNode& s = layout.supers[static_cast<std::size_t>(q)];
  const std::size_t n = t.size();
  // Opened bit positions in the pattern (bit 2j: lt_j, 2j + 1: eq_j).
  std::vector<int> pos;
  for (int j = 0; j < s.k; ++j) {
    pos.push_back(2 * j);
    if (!(s.bottom && j == 0)) pos.push_back(2 * j + 1);
  }
  std::vector<std::size_t> value(s.monos.size());
  for (std::size_t i = 0; i < s.monos.size(); ++i) {
    value[i] = static_cast<std::size_t>(layout.SuperMono(q, static_cast<int>(i)));
  }
  Node<P> out;
  out.lt = BitShares<P>(n);
  if (!s.bottom) {
    out.eq = BitShares<P>(n);
    out.has_eq = true;
  }
  const bool p0 = key.party == 0;
  if constexpr (!P::kMalicious) {
    // 64 items per word: the products of the opened bits the ANFs name (prod[T], T a
    // pattern), then each share word is XOR_i coef_i & monomial_i with coef_i from its
    // normal form (lt_anf).
    std::vector<std::uint64_t> prod(std::size_t{1} << (2 * s.k));
    std::array<std::uint64_t, 2 * ltz::kMaxSuper> ew{};
    auto eval = [&](const std::vector<std::vector<std::uint32_t>>& anf, std::size_t word) {
      std::uint64_t acc = 0;
      for (std::size_t i = 0; i < anf.size(); ++i) {
        std::uint64_t coef = 0;
        for (const std::uint32_t term : anf[i]) coef ^= prod[term];
        if (i + 1 < anf.size()) {
          acc ^= coef & t.bin[value[i]].v[word];
        } else if (p0) {
          acc ^= coef;  // the constant term: party 0 holds it
        }
      }
      return acc;
    };
    const std::size_t words = out.lt.v.size();
    const std::uint64_t tail = n % 64 == 0 ? ~std::uint64_t{0} : (std::uint64_t{1} << (n % 64)) - 1;
    for (std::size_t word = 0; word < words; ++word) {
      for (std::size_t v = 0; v < pos.size(); ++v) {
        ew[static_cast<std::size_t>(pos[v])] = opened[first + v].w[word];
      }
      prod[0] = ~std::uint64_t{0};
      for (const std::uint32_t term : s.anf_terms) {  // ascending: each prefix made before
        prod[term] = prod[term & (term - 1)] & ew[static_cast<std::size_t>(std::countr_zero(term))];
      }
      const std::uint64_t keep = word + 1 == words ? tail : ~std::uint64_t{0};
      out.lt.v[word] = eval(s.lt_anf, word) & keep;
      if (!s.bottom) out.eq.v[word] = eval(s.eq_anf, word) & keep;
    }
    return out;
  } else {
    for (std::size_t i = 0; i < n; ++i) {
      unsigned p = 0;
      for (std::size_t v = 0; v < pos.size(); ++v) p |= BitAt(opened[first + v], i) << pos[v];
      // XOR of the monomials in `set` (+ the public 1 when `one`): this item's share.
      auto eval = [&](std::uint64_t set, bool one, BitShares<P>& dst) {
        const std::uint64_t* row = t.rows.rows[i];
        const std::size_t mo = static_cast<std::size_t>(layout.num_binary);
        std::uint64_t v = 0, m = 0;
        for (; set != 0; set &= set - 1) {
          const std::size_t w = value[static_cast<std::size_t>(std::countr_zero(set))];
          v ^= row[w];
          m ^= row[w + mo];
        }
        if (one) {
          if (p0) v ^= 1;
          m ^= key.beta;
        }
        dst.v[i] = v & 1;
        dst.m[i] = m;
      };
      eval(s.lt[p], s.lt_one[p] != 0, out.lt);
      if (!s.bottom) eval(s.eq[p], s.eq_one[p] != 0, out.eq);
    }
    return out;
  }
}

}  // namespace

template <typename P>
Result<Shares<P>> BitToArith(BinaryContext<P>& ctx, BitShares<P> b) {
  const std::size_t n = b.size();
  MPCACHE_ASSIGN_OR_RETURN(DaBits<P> da, ctx.prep().GetDaBits(n));
  XorInPlace(b, da.b);
  MPCACHE_ASSIGN_OR_RETURN(PublicBits e, ctx.Open(std::move(b)));
  // [b] = e + (1 - 2e) [rho]
  std::vector<std::uint64_t> coef(n), add(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t ei = e.Get(i) ? 1 : 0;
    coef[i] = 1 - 2 * ei;
    add[i] = ei;
  }
  Shares<P> out = MulPublic(std::move(da.a), coef);
  AddPublicInPlace(ctx.arith().key(), out, add);
  return out;
}

template <typename P>
Result<Shares<P>> LessThanZero(BinaryContext<P>& ctx, const Shares<P>& x, int bits,
                               const LatePublic& late) {
  const std::size_t n = x.size();
  MPCACHE_RETURN_IF_ERROR(CheckCompareBits(bits));
  if (n == 0) return Shares<P>();
  const int groups = ltz::GroupsFor(bits);
  const ltz::LtzLayout& layout = ltz::LtzLayoutFor(groups);
  MPCACHE_ASSIGN_OR_RETURN(LtzTuples<P> t, ctx.prep().GetLtzTuples(n, groups));
  const bool rows_ok = P::kMalicious
                           ? t.rows.size() == n
                           : t.bin.size() == static_cast<std::size_t>(layout.num_binary) &&
                                 t.mono.size() == layout.root.monos.size();
  if (t.size() != n || t.groups != groups || !rows_ok) {
    return Internal("comparison tuples of the wrong shape from the bit preprocessing (" +
                    std::to_string(t.size()) + " for " + std::to_string(groups) + " groups)");
  }
  // Round 1: c = x + r, then the group nodes (local).
  Shares<P> masked_x = Add(x, t.r);
  MPCACHE_ASSIGN_OR_RETURN(std::vector<std::uint64_t> c,
                           ctx.arith().OpenOwned(std::move(masked_x), OpenMode::kByRole, 0, bits));
  if (late) {
    MPCACHE_RETURN_IF_ERROR(late(c));
    if (bits < 64) {
      for (auto& v : c) v &= (std::uint64_t{1} << bits) - 1;
    }
  }
  const int top = bits - 1;
  BitShares<P> r_top;
  std::vector<Node<P>> nodes = TupleGroupNodes(ctx.key(), t, layout, c, top, r_top);
  const auto m = layout.supers.size();
  std::vector<Node<P>> supers(m);
  // Round 2 (when some super-node holds two or more groups): every group node of those
  // super-nodes masked by the tuple's fresh bits, opened together; then each super-node's
  // (lt, eq) from the mask monomials (local).
  if (layout.combine) {
    std::vector<BitShares<P>> masked;
    std::vector<std::size_t> first(m, 0);
    for (std::size_t q = 0; q < m; ++q) {
      const ltz::SuperNode& s = layout.supers[q];
      first[q] = masked.size();
      if (s.k < 2) continue;
      int var = 0;
      for (int j = 0; j < s.k; ++j) {
        Node<P>& node = nodes[static_cast<std::size_t>(s.first) + static_cast<std::size_t>(j)];
        XorValueInPlace(node.lt, t, layout, layout.SuperMono(static_cast<int>(q), var++));
        masked.push_back(std::move(node.lt));
        if (s.bottom && j == 0) continue;
        XorValueInPlace(node.eq, t, layout, layout.SuperMono(static_cast<int>(q), var++));
        masked.push_back(std::move(node.eq));
      }
    }
    MPCACHE_ASSIGN_OR_RETURN(std::vector<PublicBits> opened, ctx.OpenMany(std::move(masked)));
    for (std::size_t q = 0; q < m; ++q) {
      if (layout.supers[q].k < 2) continue;
      supers[q] = CombineSuper(ctx.key(), t, layout, static_cast<int>(q), opened, first[q]);
    }
  }
  for (std::size_t q = 0; q < m; ++q) {
    if (layout.supers[q].k == 1) {
      supers[q] = std::move(nodes[static_cast<std::size_t>(layout.supers[q].first)]);
    }
  }
  // Round 3: the fused root. Variables u = lt_top ^ r_top, eq_top, then lt_q, eq_q (q > 0)
  // downwards, each masked by a fresh tuple bit; [x < 0] = c_top ^ u ^ R expands into the
  // tuple's arithmetic monomials of those masks.
  const ltz::RootMonos& root = layout.root;
  std::vector<BitShares<P>> root_vars(static_cast<std::size_t>(root.vars));
  const int top_q = static_cast<int>(m) - 1;
  root_vars[static_cast<std::size_t>(root.VarLt(top_q))] = Xor(std::move(supers[m - 1].lt), r_top);
  for (int q = top_q; q >= 0; --q) {
    if (q != top_q) {
      root_vars[static_cast<std::size_t>(root.VarLt(q))] =
          std::move(supers[static_cast<std::size_t>(q)].lt);
    }
    if (q > 0) {
      root_vars[static_cast<std::size_t>(root.VarEq(q))] =
          std::move(supers[static_cast<std::size_t>(q)].eq);
    }
  }
  for (int v = 0; v < root.vars; ++v) {
    XorValueInPlace(root_vars[static_cast<std::size_t>(v)], t, layout, layout.root_masks + v);
  }
  MPCACHE_ASSIGN_OR_RETURN(std::vector<PublicBits> e, ctx.OpenMany(std::move(root_vars)));
  const std::size_t per = root.monos.size() + 1;
  Shares<P> out(n);
  // Each item's opened pattern (root.vars = 2m - 1 bits: 7 for the layouts' m <= 4
  // super-nodes), and c_top = 1 flips the result to 1 - (u ^ R).
  if (root.vars > 8) {
    return Internal("a comparison root of " + std::to_string(root.vars) +
                    " variables: its patterns do not fit a byte");
  }
  std::vector<std::uint8_t> pattern(n);
  for (std::size_t w = 0; w * 64 < n; ++w) {  // 64 items at a time, the words in registers
    std::array<std::uint64_t, 8> ew{};
    for (int v = 0; v < root.vars; ++v)
      ew[static_cast<std::size_t>(v)] = e[static_cast<std::size_t>(v)].w[w];
    const std::size_t items = std::min<std::size_t>(64, n - 64 * w);
    for (std::size_t b = 0; b < items; ++b) {
      unsigned p = 0;
      for (int v = 0; v < root.vars; ++v)
        p |= static_cast<unsigned>((ew[static_cast<std::size_t>(v)] >> b) & 1) << v;
      pattern[64 * w + b] = static_cast<std::uint8_t>(p);
    }
  }
  const auto flip = [&](std::size_t i) { return ((c[i] >> top) & 1) != 0; };
  // The constant term of item i's pattern row, flipped with the item.
  const auto constant_of = [&](std::size_t i, bool f) {
    const std::uint64_t c0 = root.coef[pattern[i] * per + per - 1];
    return f ? 1 - c0 : c0;
  };
  if constexpr (P::kMalicious) {
    std::vector<std::uint64_t> constant(n);
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint64_t* coef = root.coef.data() + pattern[i] * per;
      const std::uint64_t* row = t.rows.rows[i];
      const bool f = flip(i);
      u128 acc_v = 0, acc_m = 0;
      for (std::size_t k = 0; k + 1 < per; ++k) {
        // The coefficient negated mod 2^64 (as the transcripts pin), then lifted.
        const std::uint64_t cf = f ? 0 - coef[k] : coef[k];
        const std::size_t w = layout.MonoWord(static_cast<int>(k));
        acc_v += (u128{row[w + 1]} << 64 | row[w]) * cf;
        acc_m += (u128{row[w + 3]} << 64 | row[w + 2]) * cf;
      }
      out.v[i] = acc_v;
      out.m[i] = acc_m;
      constant[i] = constant_of(i, f);
    }
    AddPublicInPlace(ctx.arith().key(), out, constant);
  } else {
    // Item by item, its pattern's coefficient row against every monomial vector (read in
    // step), summed in a register, negated once when c_top flips it, and party 0's
    // constant term added (AddPublicInPlace's semi-honest part).
    const bool p0 = ctx.arith().key().party == 0;
    std::vector<const std::uint64_t*> mono(per - 1);
    for (std::size_t k = 0; k + 1 < per; ++k) mono[k] = t.mono[k].v.data();
    const auto sum_items = [&]<std::size_t K>(std::integral_constant<std::size_t, K>) {
      const std::size_t monos = K != 0 ? K : per - 1;
      for (std::size_t i = 0; i < n; ++i) {
        const std::uint64_t* cf = root.coef.data() + pattern[i] * per;
        std::uint64_t acc = 0;
        for (std::size_t k = 0; k < monos; ++k) acc += mono[k][i] * cf[k];
        const bool f = flip(i);
        if (f) acc = 0 - acc;
        if (p0) acc += constant_of(i, f);
        out.v[i] = acc;
      }
    };
    // The layouts' roots over 2 and 3 super-nodes (7 and 19 monomials) unrolled.
    if (per - 1 == 7) {
      sum_items(std::integral_constant<std::size_t, 7>{});
    } else if (per - 1 == 19) {
      sum_items(std::integral_constant<std::size_t, 19>{});
    } else {
      sum_items(std::integral_constant<std::size_t, 0>{});
    }
  }
  return out;
}

template <typename P>
Result<Shares<P>> LessThan(BinaryContext<P>& ctx, const Shares<P>& x, const Shares<P>& y,
                           int bits) {
  if (x.size() != y.size()) {
    return InvalidArgument("LessThan of vectors of sizes " + std::to_string(x.size()) + " and " +
                           std::to_string(y.size()));
  }
  return LessThanZero(ctx, Sub(x, y), bits);
}

// P names a type in explicit instantiations: it cannot be parenthesised.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define MPCACHE_INSTANTIATE_COMPARE(P)                                                          \
  template Result<Shares<P>> BitToArith<P>(BinaryContext<P>&, BitShares<P>);                    \
  template Result<Shares<P>> LessThanZero<P>(BinaryContext<P>&, const Shares<P>&, int,          \
                                             const LatePublic&);                                \
  template Result<Shares<P>> LessThan<P>(BinaryContext<P>&, const Shares<P>&, const Shares<P>&, \
                                         int);
// NOLINTEND(bugprone-macro-parentheses)
MPCACHE_INSTANTIATE_COMPARE(SemiHonest)
MPCACHE_INSTANTIATE_COMPARE(Spdz2k)

}  // namespace mpcache::mpc
