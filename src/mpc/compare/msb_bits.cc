// MsbBits: the sign as a binary share, with an edaBit and AND levels (compare.h). The tree's
// first two levels are local (group_nodes.h over the edaBit's products), then the
// ceil((l-1)/4) group nodes are combined pairwise, one AND batch per level, down to the
// root. LessThanZero (compare.cc) takes the three-round path with comparison tuples instead.
#include <string>

#include "mpc/compare/compare.h"
#include "mpc/compare/group_nodes.h"

namespace mpcache::mpc {

namespace {

using cmp_detail::Node;

// Open c = x + r (its low `bits` bits matter) and build the group nodes of the low
// bits - 1 positions (round 1, then local work).
template <typename P>
struct Prepared {
  BitShares<P> r_top;            // bit bits - 1 of r
  std::vector<std::uint64_t> c;  // the opened c (mod 2^bits)
  std::vector<Node<P>> level;
};

cmp_detail::RowMap EdaRowMap(int low) {
  cmp_detail::RowMap map;
  const int groups = (low + edabit::kGroupBits - 1) / edabit::kGroupBits;
  map.word.resize(static_cast<std::size_t>(groups));
  for (int g = 0; g < groups; ++g) {
    for (unsigned s = 1; s < 16; ++s) {
      const int idx = edabit::MaskIndex(s);
      map.word[static_cast<std::size_t>(g)][s] =
          idx < 0 ? edabit::BitWord(edabit::GroupBase(g) + std::countr_zero(s))
                  : edabit::ProductWord(edabit::GroupOffset(g) + idx);
    }
  }
  map.mac_offset = edabit::kBinaryWords;
  map.r_top = edabit::BitWord(low);
  return map;
}

template <typename P>
Result<Prepared<P>> Prepare(BinaryContext<P>& ctx, const Shares<P>& x, int bits) {
  MPCACHE_RETURN_IF_ERROR(CheckCompareBits(bits));
  const std::size_t n = x.size();
  Prepared<P> out;
  MPCACHE_ASSIGN_OR_RETURN(EdaBits<P> eda, ctx.prep().GetEdaBits(n));
  Shares<P> masked = Add(x, eda.r);
  MPCACHE_ASSIGN_OR_RETURN(out.c,
                           ctx.arith().OpenOwned(std::move(masked), OpenMode::kByRole, 0, bits));
  const int top = bits - 1;
  if constexpr (P::kMalicious) {
    if (eda.rows.size() != n) return Internal("edaBits without rows in malicious mode");
    out.level = cmp_detail::GroupNodesFromRows<P>(ctx.key(), eda.rows, out.c, top, EdaRowMap(top),
                                                  out.r_top);
  } else {
    const std::vector<PublicBits> cb = cmp_detail::BitslicedC(out.c);
    const int groups = (top + edabit::kGroupBits - 1) / edabit::kGroupBits;
    out.level.reserve(static_cast<std::size_t>(groups));
    for (int g = 0; g < groups; ++g) {
      auto mono = [&](unsigned s) -> const BitShares<P>& {
        const int idx = edabit::MaskIndex(s);
        return idx < 0
                   ? eda.bits[static_cast<std::size_t>(edabit::GroupBase(g) + std::countr_zero(s))]
                   : eda.prods[static_cast<std::size_t>(edabit::GroupOffset(g) + idx)];
      };
      out.level.push_back(cmp_detail::GroupNodeBitsliced<P>(ctx.key(), mono, cb, g, top, n));
    }
    out.r_top = std::move(eda.bits[static_cast<std::size_t>(top)]);
  }
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
  PublicBits c_top(pre.c.size());
  for (std::size_t i = 0; i < pre.c.size(); ++i) c_top.Set(i, ((pre.c[i] >> (bits - 1)) & 1) != 0);
  XorPublicInPlace(ctx.key(), msb, c_top);
  return msb;
}

template Result<BitShares<SemiHonest>> MsbBits<SemiHonest>(BinaryContext<SemiHonest>&,
                                                           const Shares<SemiHonest>&, int);
template Result<BitShares<Spdz2k>> MsbBits<Spdz2k>(BinaryContext<Spdz2k>&, const Shares<Spdz2k>&,
                                                   int);

}  // namespace mpcache::mpc
