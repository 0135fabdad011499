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

// `mode`/`king`: how c is opened (king: 2 rounds; kByRole: the role table's; context.h).
template <typename P>
Result<Shares<P>> Trunc(Context<P>& ctx, const Shares<P>& x, int frac_bits,
                        OpenMode mode = OpenMode::kByRole, PartyId king = 0);

}  // namespace mpcache::mpc
