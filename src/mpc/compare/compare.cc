#include "mpc/compare/compare.h"

#include <string>

namespace mpcache::mpc {

std::uint64_t LtzBytesPerPeer(std::uint64_t n) {
  std::uint64_t bytes = 8 * n + (n + 7) / 8;
  for (int g : kCmpGates) bytes += (2 * static_cast<std::uint64_t>(g) * n + 7) / 8;
  return bytes;
}

namespace {

// A node of the comparison tree over a range of bit positions.
template <typename P>
struct Node {
  BitShares<P> lt, eq;
  bool has_eq = false;
};

}  // namespace

template <typename P>
Result<BitShares<P>> MsbBits(BinaryContext<P>& ctx, const Shares<P>& x) {
  const std::size_t n = x.size();
  Context<P>& arith = ctx.arith();
  MPCACHE_ASSIGN_OR_RETURN(EdaBits<P> eda, ctx.prep().GetEdaBits(n));
  // Round 1: c = x + r.
  Shares<P> masked = Add(x, eda.r);
  MPCACHE_ASSIGN_OR_RETURN(std::vector<std::uint64_t> c, arith.OpenOwned(std::move(masked)));
  std::vector<PublicBits> cb(64, PublicBits(n));
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t ci = c[i], bit = std::uint64_t{1} << (i % 64);
    for (std::size_t j = 0; j < 64; ++j) {
      if ((ci >> j) & 1) cb[j].w[i / 64] |= bit;
    }
  }
  const BitKey& key = ctx.key();
  // Leaves (local), lowest position first.
  std::vector<Node<P>> level;
  level.reserve(63);
  for (std::size_t j = 0; j < 63; ++j) {
    Node<P> leaf;
    PublicBits not_c = cb[j];
    for (auto& w : not_c.w) w = ~w;
    leaf.lt = eda.bits[j];
    AndPublicInPlace(leaf.lt, not_c);
    if (j > 0) {
      leaf.eq = eda.bits[j];
      XorPublicInPlace(key, leaf.eq, not_c);  // r ^ c ^ 1
      leaf.has_eq = true;
    }
    level.push_back(std::move(leaf));
  }
  // Tree levels: one AND batch each.
  while (level.size() > 1) {
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
  BitShares<P> msb = std::move(level[0].lt);
  XorInPlace(msb, eda.bits[63]);
  XorPublicInPlace(key, msb, cb[63]);
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
Result<Shares<P>> LessThanZero(BinaryContext<P>& ctx, const Shares<P>& x) {
  if (x.empty()) return Shares<P>();
  MPCACHE_ASSIGN_OR_RETURN(BitShares<P> msb, MsbBits(ctx, x));
  return BitToArith(ctx, std::move(msb));
}

template <typename P>
Result<Shares<P>> LessThan(BinaryContext<P>& ctx, const Shares<P>& x, const Shares<P>& y) {
  if (x.size() != y.size()) {
    return InvalidArgument("LessThan of vectors of sizes " + std::to_string(x.size()) + " and " +
                           std::to_string(y.size()));
  }
  return LessThanZero(ctx, Sub(x, y));
}

#define MPCACHE_INSTANTIATE_COMPARE(P)                                             \
  template Result<BitShares<P>> MsbBits<P>(BinaryContext<P>&, const Shares<P>&);   \
  template Result<Shares<P>> BitToArith<P>(BinaryContext<P>&, BitShares<P>);       \
  template Result<Shares<P>> LessThanZero<P>(BinaryContext<P>&, const Shares<P>&); \
  template Result<Shares<P>> LessThan<P>(BinaryContext<P>&, const Shares<P>&, const Shares<P>&);
MPCACHE_INSTANTIATE_COMPARE(SemiHonest)
MPCACHE_INSTANTIATE_COMPARE(Spdz2k)

}  // namespace mpcache::mpc
