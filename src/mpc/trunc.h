// Probabilistic truncation by f bits with dealer pairs: for |x| < 2^62 (as a signed 64-bit
// value) the result is x >> f (arithmetic) or one more, with probability 1 (never a large
// error). Dealer pair: [r] uniform in Z_2^64, [r_top] = bit 63 of r, [r_shift] =
// (r mod 2^63) >> f. Open c = x + 2^62 + r mod 2^64; b = c_63 XOR r_top = c_63 + r_top -
// 2 c_63 r_top (linear since c_63 is public); result = (c mod 2^63) >> f - r_shift +
// b 2^(63-f) - 2^(62-f).
// Cost per party for n values: 1 round, 8n bytes to each of the 2 peers (all-to-all).
#pragma once

#include "mpc/context.h"

namespace mpcache::mpc {

// The public part of one truncation's result and the coefficient of its [r_top] term, from
// the opened c: result = pub + coef [r_top] - [r_shift] (every fused or deferred
// truncation finishes this way: mpc/fused_product.h, mpc/lazy_shares.h).
struct TruncOpened {
  std::uint64_t pub = 0;   // (c mod 2^63) >> f + c_63 2^(63-f) - 2^(62-f)
  std::uint64_t coef = 0;  // (1 - 2 c_63) 2^(63-f)
};
inline TruncOpened TruncFromOpened(std::uint64_t c, int frac_bits) {
  const std::uint64_t c_top = c >> 63;
  const std::uint64_t top_weight = std::uint64_t{1} << (63 - frac_bits);
  const std::uint64_t low_mask = (std::uint64_t{1} << 63) - 1;
  return {
      ((c & low_mask) >> frac_bits) + c_top * top_weight - (std::uint64_t{1} << (62 - frac_bits)),
      (1 - 2 * c_top) * top_weight};
}
// The bias every truncation adds before opening (x + 2^62 + r): |x| < 2^62 stays positive.
inline constexpr std::uint64_t kTruncBias = std::uint64_t{1} << 62;

// `mode`/`king`: how c is opened (king: 2 rounds; kByRole: the role table's; context.h).
template <typename P>
Result<Shares<P>> Trunc(Context<P>& ctx, const Shares<P>& x, int frac_bits,
                        OpenMode mode = OpenMode::kByRole, PartyId king = 0);

}  // namespace mpcache::mpc
