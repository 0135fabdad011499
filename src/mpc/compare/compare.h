// Secure comparison with dealer edaBits (docs/comparison.md).
//
// MSB(x) for n values: open c = x + r mod 2^64 with an edaBit ([r], [r_0..r_63] binary);
// then MSB(x) = c_63 ^ r_63 ^ [c mod 2^63 < r mod 2^63]. The borrow bit is a log-depth
// circuit over the 63 low bit positions: per position lt_j = r_j & ~c_j, eq_j = ~(r_j ^ c_j),
// and adjacent ranges combine as (lt, eq) = (lt_hi ^ eq_hi & lt_lo, eq_hi & eq_lo), with no
// eq for the range holding bit 0. The first two levels (groups of 4 positions) are local:
// the dealer adds the ANDs of every subset of each group's r bits (edabit_layout.h), and
// with c public the group's (lt, eq) is a linear combination of those products. The 16
// group results then take 4 AND levels: 15 + 7 + 3 + 1 = 26 AND gates per value.
// Bits -> arithmetic with a daBit ([rho] in both domains): open e = b ^ rho (1 bit), then
// [b] = e + (1 - 2e) [rho].
// LessThanZero fuses the root AND with that conversion: with root inputs u = lt_H ^ r_63,
// v = eq_H, w = lt_L, MSB = c_63 ^ u ^ v w. A dealer root tuple masks u, v, w with bits
// rho_u, rho_v, rho_w (binary) and gives arithmetic shares of rho_u, rho_v, rho_w, rho_v
// rho_w, rho_u rho_w, rho_u rho_v, rho_u rho_v rho_w: after opening the three masked bits
// (1 round, 3 bits) the arithmetic u + (1 - 2u) v w is a public combination of those
// monomials. So the root costs the same bits as its AND + a daBit, one round fewer.
//
// Cost per party for n values (all-to-all opening; each figure is sent to each of the two
// peers):
//   MsbBits:      5 rounds; 8n + sum over levels L of ceil(2 g_L n / 8) bytes, with
//                 g = (15, 7, 3, 1) AND gates per value (26 in all)
//   LessThanZero: 5 rounds; 8n + ceil(30n/8) + ceil(14n/8) + ceil(6n/8) + ceil(3n/8) bytes
//                 (25 AND gates + 3 opened bits)
//   BitToArith:   1 round; ceil(n/8) bytes
// i.e. about 2 x 14.6 = 29 bytes per comparison per party for large n. Exact for |x| < 2^63
// as signed values (no probabilistic error): LessThan(x, y) needs |x - y| < 2^63.
#pragma once

#include "mpc/compare/binary_context.h"

namespace mpcache::mpc {

// AND gates per value at each level of the comparison tree.
inline constexpr int kCmpLevels = 4;
inline constexpr int kCmpGates[kCmpLevels] = {15, 7, 3, 1};

// Bytes each party sends to EACH peer for n LessThanZero values (theory, asserted in tests),
// with arithmetic openings of `open_bytes` per value (kOpenBytes<P>).
std::uint64_t LtzBytesPerPeer(std::uint64_t n, std::uint64_t open_bytes);
inline constexpr int kLtzRounds = 1 + (kCmpLevels - 1) + 1;

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
