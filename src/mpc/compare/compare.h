// Secure comparison with dealer edaBits (docs/comparison.md).
//
// MSB(x) for n values: open c = x + r mod 2^64 with an edaBit ([r], [r_0..r_63] binary);
// then MSB(x) = c_63 ^ r_63 ^ [c mod 2^63 < r mod 2^63]. The borrow bit is a log-depth
// circuit over the 63 low bit positions: leaves lt_j = r_j & ~c_j, eq_j = ~(r_j ^ c_j) are
// local; adjacent nodes combine as (lt, eq) = (lt_hi ^ eq_hi & lt_lo, eq_hi & eq_lo), with
// no eq for the node holding bit 0. 6 levels, 118 AND gates per value.
// Bits -> arithmetic with a daBit ([rho] in both domains): open e = b ^ rho (1 bit), then
// [b] = e + (1 - 2e) [rho].
//
// Cost per party for n values (all-to-all opening; each figure is sent to each of the two
// peers):
//   MsbBits:      7 rounds; 8n + sum over levels L of ceil(2 g_L n / 8) bytes, with
//                 g = (61, 31, 15, 7, 3, 1) AND gates per value (118 in all)
//   LessThanZero: 8 rounds; MsbBits + ceil(n/8) bytes
//   BitToArith:   1 round; ceil(n/8) bytes
// i.e. about 2 x 38 = 76 bytes per comparison per party for large n. Exact for |x| < 2^63
// as signed values (no probabilistic error): LessThan(x, y) needs |x - y| < 2^63.
#pragma once

#include "mpc/compare/binary_context.h"

namespace mpcache::mpc {

// AND gates per value at each level of the comparison tree.
inline constexpr int kCmpLevels = 6;
inline constexpr int kCmpGates[kCmpLevels] = {61, 31, 15, 7, 3, 1};

// Bytes each party sends to EACH peer for n LessThanZero values (theory, asserted in tests).
std::uint64_t LtzBytesPerPeer(std::uint64_t n);
inline constexpr int kLtzRounds = 1 + kCmpLevels + 1;

template <typename P>
Result<BitShares<P>> MsbBits(BinaryContext<P>& ctx, const Shares<P>& x);

template <typename P>
Result<Shares<P>> BitToArith(BinaryContext<P>& ctx, BitShares<P> b);

// [x < 0] (x read as a signed 64-bit value) as an arithmetic 0/1 share.
template <typename P>
Result<Shares<P>> LessThanZero(BinaryContext<P>& ctx, const Shares<P>& x);

// [x < y] as an arithmetic 0/1 share (needs |x - y| < 2^63).
template <typename P>
Result<Shares<P>> LessThan(BinaryContext<P>& ctx, const Shares<P>& x, const Shares<P>& y);

}  // namespace mpcache::mpc
