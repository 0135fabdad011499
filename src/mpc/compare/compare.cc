#include "mpc/compare/compare.h"

#include <algorithm>
#include <array>
#include <bit>
#include <string>

namespace mpcache::mpc {

LtzShape LtzShapeFor(int bits) {
  LtzShape s;
  s.groups = (bits - 1 + edabit::kGroupBits - 1) / edabit::kGroupBits;
  // Adjacent nodes pair up; the lowest node (holding bit 0) has no eq, so the pair holding
  // it takes one gate, every other pair two; an odd node out waits for the next level.
  for (int nodes = s.groups; nodes > 2; nodes = (nodes + 1) / 2) {
    s.gates.push_back(2 * (nodes / 2) - 1);
  }
  s.rounds = 1 + static_cast<int>(s.gates.size()) + 1;
  return s;
}

int LtzRounds(int bits) {
  return LtzShapeFor(bits).rounds;
}

std::uint64_t LtzBytesPerPeer(std::uint64_t n, int bits, std::uint64_t open_bytes) {
  std::uint64_t bytes = open_bytes * n + (3 * n + 7) / 8;  // c, then the fused root's bits
  for (const int g : LtzShapeFor(bits).gates) {
    bytes += (2 * static_cast<std::uint64_t>(g) * n + 7) / 8;
  }
  return bytes;
}

Status CheckCompareBits(int bits) {
  if (bits < kMinCompareBits || bits > 64) {
    return InvalidArgument("a comparison of " + std::to_string(bits) + "-bit values: need " +
                           std::to_string(kMinCompareBits) + "..64 bits");
  }
  return Status::Ok();
}

namespace {

// A node of the comparison tree over a range of bit positions.
template <typename P>
struct Node {
  BitShares<P> lt, eq;
  bool has_eq = false;
};

// A GF(2) polynomial in the r bits of one group, with public per-element coefficients:
// coef[S] is the bit vector of the coefficient of the monomial prod_{t in S} r_{base+t}.
struct Poly {
  std::array<PublicBits, 16> coef;
  std::array<bool, 16> nz{};
};

Poly Constant(const PublicBits& c, unsigned mask) {
  Poly p;
  p.coef[mask] = c;
  p.nz[mask] = true;
  return p;
}

void XorInto(Poly& a, const Poly& b) {
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

// Product of polynomials over boolean variables: m_S m_T = m_{S | T}.
Poly Times(const Poly& a, const Poly& b, std::size_t n) {
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

// sum_S coef_S [m_S] with [m_{}] = 1, [m_{t}] = [r_{base+t}], larger S from the products
// (semi-honest: bitsliced over the elements; the malicious path is GroupNodesFromRows).
template <typename P>
BitShares<P> Evaluate(const BitKey& key, const Poly& p, const EdaBits<P>& eda, int g,
                      std::size_t n) {
  BitShares<P> acc(n);
  const int base = edabit::GroupBase(g);
  for (unsigned s = 1; s < 16; ++s) {
    if (!p.nz[s]) continue;
    const int idx = edabit::MaskIndex(s);
    const BitShares<P>& m = idx < 0 ? eda.bits[static_cast<std::size_t>(base) +
                                               static_cast<std::size_t>(std::countr_zero(s))]
                                    : eda.prods[static_cast<std::size_t>(edabit::GroupOffset(g)) +
                                                static_cast<std::size_t>(idx)];
    const auto& c = p.coef[s].w;
    for (std::size_t w = 0; w < acc.v.size(); ++w) acc.v[w] ^= m.v[w] & c[w];
  }
  if (p.nz[0]) XorPublicInPlace(key, acc, p.coef[0]);
  return acc;
}

// The (lt, eq) of group g of the low `low` positions (low = bits - 1), from its edaBit
// products (local). A group cut by `low` uses the products of its first bits only.
template <typename P>
Node<P> GroupNode(const BitKey& key, const EdaBits<P>& eda, const std::vector<PublicBits>& cb,
                  int g, int low, std::size_t n) {
  PublicBits ones(n);
  for (auto& w : ones.w) w = ~std::uint64_t{0};
  const int base = edabit::GroupBase(g);
  const int size = std::min(edabit::GroupSize(g), low - base);
  Poly lt, eq;
  for (int t = 0; t < size; ++t) {
    PublicBits nc = cb[static_cast<std::size_t>(base) + static_cast<std::size_t>(t)];
    for (auto& w : nc.w) w = ~w;
    const unsigned bit = 1u << t;
    Poly lt_t = Constant(nc, bit);  // r_t & ~c_t
    Poly eq_t = Constant(nc, 0);    // r_t ^ ~c_t
    XorInto(eq_t, Constant(ones, bit));
    if (t == 0) {
      lt = std::move(lt_t);
      eq = std::move(eq_t);
      continue;
    }
    // (lt, eq) <- (lt_t ^ eq_t lt, eq_t eq): position t is above the range so far.
    Poly next_lt = Times(eq_t, lt, n);
    XorInto(next_lt, lt_t);
    if (g > 0) eq = Times(eq_t, eq, n);
    lt = std::move(next_lt);
  }
  Node<P> node;
  node.lt = Evaluate(key, lt, eda, g, n);
  if (g > 0) {
    node.eq = Evaluate(key, eq, eda, g, n);
    node.has_eq = true;
  }
  return node;
}

// The group polynomials as sets of monomials (bit S of a PolySet: the monomial
// prod_{t in S} r_{base+t} is present; S = 0 is the constant 1), for a group of `size`
// positions whose public c bits are `c` (bit t = position base + t). The same recurrence as
// GroupNode's, for the malicious path, which evaluates them item by item.
using PolySet = std::uint32_t;

constexpr PolySet PolyTimes(PolySet a, PolySet b) {
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
    p.lt = lt_t ^ PolyTimes(eq_t, p.lt);  // position t is above the range so far
    p.eq = PolyTimes(eq_t, p.eq);
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

// Malicious: the group nodes item by item from the edaBits' rows (value words hold the
// share in bit 0; MAC words are GF(2^64) shares): lt = XOR of the monomials' words that the
// group's polynomial for this item's c bits contains, and the constant term (1) adds the
// public 1 (party 0's value, every party's beta).
// Also fills r_top (bit `low` of r, the comparison's top bit) in the same pass over the
// rows. (Software prefetching of the next rows' ~30 cache lines was tried: slower.)
template <typename P>
std::vector<Node<P>> GroupNodesFromRows(const BitKey& key, const EdaRows& rows,
                                        const std::vector<std::uint64_t>& c, int low,
                                        BitShares<P>& r_top) {
  const std::size_t n = c.size();
  const int groups = (low + edabit::kGroupBits - 1) / edabit::kGroupBits;
  std::vector<Node<P>> nodes(static_cast<std::size_t>(groups));
  // Row word of each monomial S of each group (S with one bit: r's bit; more: a product).
  std::vector<std::array<std::size_t, 16>> word(static_cast<std::size_t>(groups));
  std::vector<int> size(static_cast<std::size_t>(groups));
  for (int g = 0; g < groups; ++g) {
    const int base = edabit::GroupBase(g);
    size[static_cast<std::size_t>(g)] = std::min(edabit::GroupSize(g), low - base);
    for (unsigned s = 1; s < 16; ++s) {
      const int idx = edabit::MaskIndex(s);
      word[static_cast<std::size_t>(g)][s] =
          idx < 0 ? edabit::BitWord(base + std::countr_zero(s))
                  : edabit::ProductWord(edabit::GroupOffset(g) + idx);
    }
    Node<P>& node = nodes[static_cast<std::size_t>(g)];
    node.lt = BitShares<P>(n);
    if (g > 0) {
      node.eq = BitShares<P>(n);
      node.has_eq = true;
    }
  }
  const bool p0 = key.party == 0;
  const std::uint64_t beta = key.beta;
  r_top = BitShares<P>(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t* row = rows.rows[i];
    r_top.v[i] = row[edabit::BitWord(low)] & 1;
    r_top.m[i] = row[edabit::MacOf(edabit::BitWord(low))];
    for (int g = 0; g < groups; ++g) {
      const auto gi = static_cast<std::size_t>(g);
      const unsigned cg =
          static_cast<unsigned>(c[i] >> edabit::GroupBase(g)) & ((1u << size[gi]) - 1);
      const GroupPolys& poly = kGroupTable.at[size[gi]][cg];
      auto eval = [&](PolySet set, BitShares<P>& out) {
        std::uint64_t v = 0, m = 0;
        for (PolySet rest = set & ~PolySet{1}; rest != 0; rest &= rest - 1) {
          const std::size_t w = word[gi][static_cast<unsigned>(std::countr_zero(rest))];
          v ^= row[w];
          m ^= row[edabit::MacOf(w)];
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

// Open c = x + r (its low `bits` bits matter) and build the group nodes of the low
// bits - 1 positions (round 1, then local work).
template <typename P>
struct Prepared {
  BitShares<P> r_top;            // bit bits - 1 of r
  std::vector<std::uint64_t> c;  // the opened c (mod 2^bits)
  std::vector<Node<P>> level;
  bool CTop(std::size_t i, int bits) const { return ((c[i] >> (bits - 1)) & 1) != 0; }
};

template <typename P>
Result<Prepared<P>> Prepare(BinaryContext<P>& ctx, const Shares<P>& x, int bits,
                           const LatePublic& late = {}) {
  MPCACHE_RETURN_IF_ERROR(CheckCompareBits(bits));
  const std::size_t n = x.size();
  Prepared<P> out;
  MPCACHE_ASSIGN_OR_RETURN(EdaBits<P> eda, ctx.prep().GetEdaBits(n));
  Shares<P> masked = Add(x, eda.r);
  MPCACHE_ASSIGN_OR_RETURN(out.c,
                           ctx.arith().OpenOwned(std::move(masked), OpenMode::kAllToAll, 0, bits));
  if (late) {
    MPCACHE_RETURN_IF_ERROR(late(out.c));
    if (bits < 64) {
      for (auto& v : out.c) v &= (std::uint64_t{1} << bits) - 1;
    }
  }
  const int top = bits - 1;
  if constexpr (P::kMalicious) {
    if (eda.rows.size() != n) return Internal("edaBits without rows in malicious mode");
    out.level = GroupNodesFromRows<P>(ctx.key(), eda.rows, out.c, top, out.r_top);
  } else {
    std::vector<PublicBits> cb(64, PublicBits(n));  // bit j of c, bitsliced
    std::array<std::uint64_t, 64> block{};
    for (std::size_t b = 0; b < WordsFor(n); ++b) {
      const std::size_t len = std::min<std::size_t>(64, n - 64 * b);
      std::copy(out.c.begin() + static_cast<std::ptrdiff_t>(64 * b),
                out.c.begin() + static_cast<std::ptrdiff_t>(64 * b + len), block.begin());
      std::fill(block.begin() + static_cast<std::ptrdiff_t>(len), block.end(), 0);
      Transpose64(block.data());
      for (std::size_t j = 0; j < 64; ++j) cb[j].w[b] = block[j];
    }
    const int groups = LtzShapeFor(bits).groups;
    out.level.reserve(static_cast<std::size_t>(groups));
    for (int g = 0; g < groups; ++g) {
      out.level.push_back(GroupNode(ctx.key(), eda, cb, g, top, n));
    }
    out.r_top = std::move(eda.bits[static_cast<std::size_t>(top)]);
  }
  return out;
}

// c's top bit as public bits.
template <typename P>
PublicBits TopBits(const Prepared<P>& pre, int bits) {
  PublicBits out(pre.c.size());
  for (std::size_t i = 0; i < pre.c.size(); ++i) out.Set(i, pre.CTop(i, bits));
  return out;
}

// Combine adjacent nodes, one AND batch per level, until `target` nodes are left.
template <typename P>
Status Reduce(BinaryContext<P>& ctx, std::vector<Node<P>>& level, std::size_t target) {
  while (level.size() > target) {
    BitAndBatch<P> batch(ctx);
    const std::size_t pairs = level.size() / 2;
    std::vector<std::size_t> h_lt(pairs), h_eq(pairs, 0);
    for (std::size_t k = 0; k < pairs; ++k) {
      const Node<P>& lo = level[2 * k];
      const Node<P>& hi = level[2 * k + 1];
      h_lt[k] = batch.Prepare(hi.eq, lo.lt);
      if (lo.has_eq) h_eq[k] = batch.Prepare(hi.eq, lo.eq);
    }
    MPCACHE_RETURN_IF_ERROR(batch.Exchange());
    std::vector<Node<P>> next;
    next.reserve(pairs + 1);
    for (std::size_t k = 0; k < pairs; ++k) {
      Node<P> node;
      node.lt = Xor(std::move(level[2 * k + 1].lt), batch.Take(h_lt[k]));
      if (level[2 * k].has_eq) {
        node.eq = batch.Take(h_eq[k]);
        node.has_eq = true;
      }
      next.push_back(std::move(node));
    }
    if (level.size() % 2 == 1) next.push_back(std::move(level.back()));
    level = std::move(next);
  }
  return Status::Ok();
}

}  // namespace

template <typename P>
Result<BitShares<P>> MsbBits(BinaryContext<P>& ctx, const Shares<P>& x, int bits) {
  MPCACHE_ASSIGN_OR_RETURN(Prepared<P> pre, Prepare(ctx, x, bits));
  MPCACHE_RETURN_IF_ERROR(Reduce(ctx, pre.level, 1));
  BitShares<P> msb = std::move(pre.level[0].lt);
  XorInPlace(msb, pre.r_top);
  XorPublicInPlace(ctx.key(), msb, TopBits(pre, bits));
  return msb;
}

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
  MPCACHE_ASSIGN_OR_RETURN(Prepared<P> pre, Prepare(ctx, x, bits, late));
  MPCACHE_RETURN_IF_ERROR(Reduce(ctx, pre.level, 2));
  // Fused root + conversion: MSB = c_top ^ u ^ v w with u = lt_H ^ r_top, v = eq_H,
  // w = lt_L (top = bits - 1).
  MPCACHE_ASSIGN_OR_RETURN(RootTuples<P> t, ctx.prep().GetRootTuples(n));
  BitShares<P> u = Xor(std::move(pre.level[1].lt), pre.r_top);
  std::vector<BitShares<P>> masked;
  masked.push_back(Xor(std::move(u), t.u));
  masked.push_back(Xor(std::move(pre.level[1].eq), t.v));
  masked.push_back(Xor(std::move(pre.level[0].lt), t.w));
  MPCACHE_ASSIGN_OR_RETURN(std::vector<PublicBits> e, ctx.OpenMany(std::move(masked)));
  // Each bit is e + (1 - 2e) rho, affine in its mask rho; expand u + (1 - 2u) v w over the
  // dealer's arithmetic monomials of the masks, then apply c_top (t -> 1 - t).
  using R = RootTuples<P>;
  Shares<P> out(n);
  std::vector<std::uint64_t> constant(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t au = e[0].Get(i) ? 1 : 0, av = e[1].Get(i) ? 1 : 0,
                        aw = e[2].Get(i) ? 1 : 0;
    const std::uint64_t bu = 1 - 2 * au, bv = 1 - 2 * av, bw = 1 - 2 * aw;
    const std::uint64_t k0 = av * aw, kv = bv * aw, kw = av * bw, kvw = bv * bw;
    const std::uint64_t gamma = 1 - 2 * au, delta = 0 - 2 * bu;
    std::array<std::uint64_t, 7> coef{};
    coef[R::kU] = bu + delta * k0;
    coef[R::kV] = gamma * kv;
    coef[R::kW] = gamma * kw;
    coef[R::kVW] = gamma * kvw;
    coef[R::kUV] = delta * kv;
    coef[R::kUW] = delta * kw;
    coef[R::kUVW] = delta * kvw;
    std::uint64_t k = au + gamma * k0;
    if (pre.CTop(i, bits)) {
      for (auto& cf : coef) cf = 0 - cf;
      k = 1 - k;
    }
    constant[i] = k;
    for (std::size_t m = 0; m < 7; ++m) {
      out.v[i] += t.mono[m].v[i] * coef[m];
      if constexpr (P::kMalicious) out.m[i] += t.mono[m].m[i] * coef[m];
    }
  }
  AddPublicInPlace(ctx.arith().key(), out, constant);
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
  template Result<BitShares<P>> MsbBits<P>(BinaryContext<P>&, const Shares<P>&, int);           \
  template Result<Shares<P>> BitToArith<P>(BinaryContext<P>&, BitShares<P>);                    \
  template Result<Shares<P>> LessThanZero<P>(BinaryContext<P>&, const Shares<P>&, int,          \
                                             const LatePublic&);                                \
  template Result<Shares<P>> LessThan<P>(BinaryContext<P>&, const Shares<P>&, const Shares<P>&, \
                                         int);
// NOLINTEND(bugprone-macro-parentheses)
MPCACHE_INSTANTIATE_COMPARE(SemiHonest)
MPCACHE_INSTANTIATE_COMPARE(Spdz2k)

}  // namespace mpcache::mpc
