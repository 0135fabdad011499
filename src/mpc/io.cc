#include "mpc/io.h"

#include <string>

namespace mpcache::mpc {

template <typename P>
Result<Shares<P>> Input(Context<P>& ctx, PartyId owner, std::span<const std::uint64_t> values,
                        std::size_t n) {
  if (ctx.failed()) return MacCheckFailed("a MAC check failed earlier: this session is closed");
  if (owner < 0 || owner >= ctx.num_parties()) {
    return InvalidArgument("input owner must be a party id, got " + std::to_string(owner));
  }
  if (ctx.self() == owner && values.size() != n) {
    return InvalidArgument("the input owner must pass exactly n values");
  }
  MPCACHE_ASSIGN_OR_RETURN(InputMasks<P> masks, ctx.prep().GetInputMasks(n, owner));
  std::vector<std::uint64_t> d(n);
  if (ctx.self() == owner) {
    for (std::size_t i = 0; i < n; ++i) d[i] = values[i] - masks.clear[i];
    for (PartyId p = 0; p < ctx.num_parties(); ++p) {
      if (p != owner)
        MPCACHE_RETURN_IF_ERROR(ctx.channel().template SendValues<std::uint64_t>(p, d));
    }
    MPCACHE_RETURN_IF_ERROR(ctx.channel().Flush());
    ctx.stats().RecordRound();
  } else {
    ctx.stats().RecordRound();
    MPCACHE_RETURN_IF_ERROR(ctx.channel().template RecvValues<std::uint64_t>(owner, d));
  }
  ctx.RecordBroadcast(d);
  Shares<P> x = std::move(masks.r);
  AddPublicInPlace(ctx.key(), x, d);
  return x;
}

template <typename P>
Result<Shares<P>> InputSum(Context<P>& ctx, std::span<const std::uint64_t> mine) {
  if (ctx.failed()) return MacCheckFailed("a MAC check failed earlier: this session is closed");
  const std::size_t n = mine.size();
  const int parties = ctx.num_parties();
  std::vector<InputMasks<P>> masks;
  for (PartyId p = 0; p < parties; ++p) {
    MPCACHE_ASSIGN_OR_RETURN(InputMasks<P> m, ctx.prep().GetInputMasks(n, p));
    masks.push_back(std::move(m));
  }
  std::vector<std::vector<std::uint64_t>> d(static_cast<std::size_t>(parties),
                                            std::vector<std::uint64_t>(n));
  auto& own = d[static_cast<std::size_t>(ctx.self())];
  const auto& clear = masks[static_cast<std::size_t>(ctx.self())].clear;
  for (std::size_t i = 0; i < n; ++i) own[i] = mine[i] - clear[i];
  for (PartyId p = 0; p < parties; ++p) {
    if (p != ctx.self())
      MPCACHE_RETURN_IF_ERROR(ctx.channel().template SendValues<std::uint64_t>(p, own));
  }
  MPCACHE_RETURN_IF_ERROR(ctx.channel().Flush());
  ctx.stats().RecordRound();
  for (PartyId p = 0; p < parties; ++p) {
    if (p != ctx.self()) {
      MPCACHE_RETURN_IF_ERROR(
          ctx.channel().template RecvValues<std::uint64_t>(p, d[static_cast<std::size_t>(p)]));
    }
  }
  Shares<P> sum(n);
  for (PartyId p = 0; p < parties; ++p) {
    const auto pu = static_cast<std::size_t>(p);
    ctx.RecordBroadcast(d[pu]);
    Shares<P> x = std::move(masks[pu].r);
    AddPublicInPlace(ctx.key(), x, d[pu]);
    AddInPlace(sum, x);
  }
  return sum;
}

template <typename P>
Result<Shares<P>> InputFromClient(Context<P>& ctx, InputMasks<P>&& masks,
                                  std::span<const std::uint64_t> d) {
  if (ctx.failed()) return MacCheckFailed("a MAC check failed earlier: this session is closed");
  if (masks.owner != kClient) return InvalidArgument("InputFromClient needs client-owned masks");
  if (d.size() != masks.r.size()) {
    return InvalidArgument("client sent " + std::to_string(d.size()) + " values for " +
                           std::to_string(masks.r.size()) + " masks");
  }
  ctx.RecordBroadcast(d);
  Shares<P> x = std::move(masks.r);
  AddPublicInPlace(ctx.key(), x, d);
  return x;
}

template <typename P>
Result<std::vector<std::uint64_t>> OutputTo(Context<P>& ctx, const Shares<P>& x, PartyId receiver) {
  if (ctx.failed()) return MacCheckFailed("a MAC check failed earlier: nothing is released");
  if (receiver < 0 || receiver >= ctx.num_parties()) {
    return InvalidArgument("output receiver must be a party id, got " + std::to_string(receiver));
  }
  const std::size_t n = x.size();
  if constexpr (P::kMalicious) {
    MPCACHE_ASSIGN_OR_RETURN(InputMasks<P> masks, ctx.prep().GetInputMasks(n, receiver));
    Shares<P> masked = Add(std::move(masks.r), x);
    MPCACHE_ASSIGN_OR_RETURN(std::vector<std::uint64_t> opened, ctx.OpenOwned(std::move(masked)));
    MPCACHE_RETURN_IF_ERROR(ctx.CheckMacs());
    if (ctx.self() != receiver) return std::vector<std::uint64_t>{};
    for (std::size_t i = 0; i < n; ++i) opened[i] -= masks.clear[i];
    return opened;
  } else {
    if (ctx.self() != receiver) {
      MPCACHE_RETURN_IF_ERROR(ctx.channel().template SendValues<std::uint64_t>(receiver, x.v));
      MPCACHE_RETURN_IF_ERROR(ctx.channel().Flush());
      ctx.stats().RecordRound();
      return std::vector<std::uint64_t>{};
    }
    ctx.stats().RecordRound();
    std::vector<std::uint64_t> sum = x.v, in(n);
    for (PartyId p = 0; p < ctx.num_parties(); ++p) {
      if (p == receiver) continue;
      MPCACHE_RETURN_IF_ERROR(ctx.channel().template RecvValues<std::uint64_t>(p, in));
      for (std::size_t i = 0; i < n; ++i) sum[i] += in[i];
    }
    return sum;
  }
}

template <typename P>
Result<std::vector<std::uint64_t>> OutputToClient(Context<P>& ctx, const Shares<P>& x) {
  if (ctx.failed()) return MacCheckFailed("a MAC check failed earlier: nothing is released");
  MPCACHE_ASSIGN_OR_RETURN(InputMasks<P> masks, ctx.prep().GetInputMasks(x.size(), kClient));
  Shares<P> masked = Add(std::move(masks.r), x);
  MPCACHE_ASSIGN_OR_RETURN(std::vector<std::uint64_t> opened, ctx.OpenOwned(std::move(masked)));
  MPCACHE_RETURN_IF_ERROR(ctx.CheckMacs());
  return opened;
}

// P names a type in explicit instantiations: it cannot be parenthesised.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define MPCACHE_INSTANTIATE_IO(P)                                                                  \
  template Result<Shares<P>> Input<P>(Context<P>&, PartyId, std::span<const std::uint64_t>,        \
                                      std::size_t);                                                \
  template Result<Shares<P>> InputSum<P>(Context<P>&, std::span<const std::uint64_t>);             \
  template Result<Shares<P>> InputFromClient<P>(Context<P>&, InputMasks<P>&&,                      \
                                                std::span<const std::uint64_t>);                   \
  template Result<std::vector<std::uint64_t>> OutputTo<P>(Context<P>&, const Shares<P>&, PartyId); \
  template Result<std::vector<std::uint64_t>> OutputToClient<P>(Context<P>&, const Shares<P>&);
// NOLINTEND(bugprone-macro-parentheses)
MPCACHE_INSTANTIATE_IO(SemiHonest)
MPCACHE_INSTANTIATE_IO(Spdz2k)

}  // namespace mpcache::mpc
