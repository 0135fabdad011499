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
  const std::uint64_t kBias = std::uint64_t{1} << 62;
  // [c] = [x] + 2^62 + [r]
  Shares<P> c = Add(std::move(pair.r), x);
  AddPublicInPlace<P>(ctx.key(), c, std::span<const std::uint64_t>(&kBias, 1));
  MPCACHE_ASSIGN_OR_RETURN(std::vector<std::uint64_t> opened,
                           ctx.OpenOwned(std::move(c), mode, king));

  const bool p0 = ctx.self() == 0;
  const u128 alpha = ctx.key().alpha;
  const std::uint64_t top_weight = std::uint64_t{1} << (63 - frac_bits);
  const std::uint64_t bias_out = std::uint64_t{1} << (62 - frac_bits);
  const std::uint64_t low_mask = (std::uint64_t{1} << 63) - 1;
  Shares<P> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t ci = opened[i];
    const std::uint64_t c_top = ci >> 63;
    // b = c_top + r_top - 2 c_top r_top  =  c_top + (1 - 2 c_top) r_top
    const std::uint64_t coef = 1 - 2 * c_top;  // +1 or -1 mod 2^64
    // public part: (c mod 2^63) >> f + c_top 2^(63-f) - 2^(62-f)
    const std::uint64_t pub = ((ci & low_mask) >> frac_bits) + c_top * top_weight - bias_out;
    out.v[i] = pair.r_top.v[i] * (coef * top_weight) - pair.r_shift.v[i];
    if (p0) out.v[i] += pub;
    if constexpr (P::kMalicious) {
      out.m[i] = pair.r_top.m[i] * (coef * top_weight) - pair.r_shift.m[i] + alpha * pub;
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
