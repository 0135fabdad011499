#include "mpc/trunc.h"

#include <string>

namespace mpcache::mpc {

template <typename P>
Result<Shares<P>> Trunc(Context<P>& ctx, const Shares<P>& x, int frac_bits, OpenMode mode,
                        PartyId king) {
  if (frac_bits < 1 || frac_bits > 61) {
    return InvalidArgument("truncation by " + std::to_string(frac_bits) + " bits: need 1..61");
  }
  const std::size_t n = x.size();
  MPCACHE_ASSIGN_OR_RETURN(TruncPairs<P> pair, ctx.prep().GetTruncPairs(n, frac_bits));
  // [c] = [x] + 2^62 + [r]
  Shares<P> c = Add(std::move(pair.r), x);
  AddPublicInPlace<P>(ctx.key(), c, std::span<const std::uint64_t>(&kTruncBias, 1));
  MPCACHE_ASSIGN_OR_RETURN(std::vector<std::uint64_t> opened,
                           ctx.OpenOwned(std::move(c), mode, king));

  const bool p0 = ctx.self() == 0;
  const u128 alpha = ctx.key().alpha;
  Shares<P> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    // b = c_top XOR r_top = c_top + (1 - 2 c_top) r_top: result = pub + coef r_top - r_shift
    const TruncOpened t = TruncFromOpened(opened[i], frac_bits);
    out.v[i] = pair.r_top.v[i] * t.coef - pair.r_shift.v[i];
    if (p0) out.v[i] += t.pub;
    if constexpr (P::kMalicious) {
      out.m[i] = pair.r_top.m[i] * t.coef - pair.r_shift.m[i] + alpha * t.pub;
    }
  }
  return out;
}

template Result<Shares<SemiHonest>> Trunc<SemiHonest>(Context<SemiHonest>&,
                                                      const Shares<SemiHonest>&, int, OpenMode,
                                                      PartyId);
template Result<Shares<Spdz2k>> Trunc<Spdz2k>(Context<Spdz2k>&, const Shares<Spdz2k>&, int,
                                              OpenMode, PartyId);

}  // namespace mpcache::mpc
