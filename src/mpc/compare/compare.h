// Secure comparison with dealer edaBits (docs/comparison.md).
//
// The sign of an l-bit value (l = `bits`, 8 <= l <= 64): for |x| < 2^(l-1) (as a signed
// value), [x < 0] is bit l-1 of x. Open c = x + r with an edaBit ([r] uniform over the
// share ring, its low 64 bits also in the binary domain): only c mod 2^l matters, so the
// opening carries l bits (semi-honest) or l + kCheckSlackBits (malicious, checked modulo
// that width: mpc/context.h); then bit l-1 of x = c_{l-1} ^ r_{l-1} ^ [c mod 2^(l-1) <
// r mod 2^(l-1)]. The borrow bit is a log-depth circuit over the l-1 low bit positions: per
// position lt_j = r_j & ~c_j, eq_j = ~(r_j ^ c_j), and adjacent ranges combine as (lt, eq) =
// (lt_hi ^ eq_hi & lt_lo, eq_hi & eq_lo), with no eq for the range holding bit 0. The first
// two levels (groups of 4 positions) are local: the dealer adds the ANDs of every subset of
// each group's r bits (edabit_layout.h), and with c public the group's (lt, eq) is a linear
// combination of those products. The ceil((l-1)/4) group results then take AND levels
// until two are left (LtzShapeFor).
// Bits -> arithmetic with a daBit ([rho] in both domains): open e = b ^ rho (1 bit), then
// [b] = e + (1 - 2e) [rho].
// LessThanZero fuses the root AND with that conversion: with root inputs u = lt_H ^ r_{l-1},
// v = eq_H, w = lt_L, MSB = c_{l-1} ^ u ^ v w. A dealer root tuple masks u, v, w with bits
// rho_u, rho_v, rho_w (binary) and gives arithmetic shares of rho_u, rho_v, rho_w, rho_v
// rho_w, rho_u rho_w, rho_u rho_v, rho_u rho_v rho_w: after opening the three masked bits
// (1 round, 3 bits) the arithmetic u + (1 - 2u) v w is a public combination of those
// monomials. So the root costs the same bits as its AND + a daBit, one round fewer.
//
// Cost per party for n values (all-to-all opening; each figure is sent to each of the two
// peers), with B = OpenBytes<P>(l) bytes per opened value and g_L the AND gates per value
// at level L of LtzShapeFor(l):
//   LessThanZero: LtzRounds(l) rounds; B n + sum_L ceil(2 g_L n / 8) + ceil(3n/8) bytes
//                 l = 64: 5 rounds, gates (15, 7, 3);  l = 32: 4 rounds, gates (7, 3)
//   MsbBits:      the same levels and one more AND (the root) instead of the 3 root bits
//   BitToArith:   1 round; ceil(n/8) bytes
// Exact (no probabilistic error) for |x| < 2^(l-1): LessThan(x, y) needs |x - y| < 2^(l-1).
#pragma once

#include <functional>
#include <vector>

#include "mpc/compare/binary_context.h"

namespace mpcache::mpc {

// The shape of an l-bit comparison: group nodes, AND gates per value at each level until
// two nodes are left, and rounds (the opening, the levels, the fused root).
struct LtzShape {
  int groups = 0;
  std::vector<int> gates;
  int rounds = 0;
};
LtzShape LtzShapeFor(int bits);
int LtzRounds(int bits = 64);
inline constexpr int kLtzRounds = 5;  // l = 64
inline constexpr int kMinCompareBits = 8;

// Bytes each party sends to EACH peer for n LessThanZero values of `bits` bits (theory,
// asserted in tests), with arithmetic openings of `open_bytes` per value (OpenBytes<P>).
std::uint64_t LtzBytesPerPeer(std::uint64_t n, int bits, std::uint64_t open_bytes);
Status CheckCompareBits(int bits);

template <typename P>
Result<BitShares<P>> MsbBits(BinaryContext<P>& ctx, const Shares<P>& x, int bits = 64);

template <typename P>
Result<Shares<P>> BitToArith(BinaryContext<P>& ctx, BitShares<P> b);

// Called right after the opening of c = x + r with the opened values (mod 2^bits), before
// anything uses them: a caller whose x lacks a public part that becomes known only in that
// exchange (a truncation deferred into it, mpc/lazy_shares.h) adds it to c here. The
// result is reduced mod 2^bits afterwards.
using LatePublic = std::function<Status(std::vector<std::uint64_t>& c)>;

// [x < 0] (x read as a signed `bits`-bit value, |x| < 2^(bits-1)) as an arithmetic 0/1 share.
template <typename P>
Result<Shares<P>> LessThanZero(BinaryContext<P>& ctx, const Shares<P>& x, int bits = 64,
                               const LatePublic& late = {});

// [x < y] as an arithmetic 0/1 share (needs |x - y| < 2^(bits-1)).
template <typename P>
Result<Shares<P>> LessThan(BinaryContext<P>& ctx, const Shares<P>& x, const Shares<P>& y,
                           int bits = 64);

}  // namespace mpcache::mpc
