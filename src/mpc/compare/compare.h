// Secure comparison with dealer material in three rounds (docs/comparison.md).
//
// The sign of an l-bit value (l = `bits`, 8 <= l <= 64): for |x| < 2^(l-1) (as a signed
// value), [x < 0] is bit l-1 of x. With r from the dealer (uniform over the share ring, its
// low bits also in the binary domain), open c = x + r: only c mod 2^l matters, so the
// opening carries l bits (semi-honest) or l + kCheckSlackBits (malicious, checked modulo
// that width: mpc/context.h); then bit l-1 of x = c_{l-1} ^ r_{l-1} ^ [c mod 2^(l-1) <
// r mod 2^(l-1)]. The borrow is a comparison tree over the l-1 low positions with nodes
// (lt, eq) and (lt, eq) o (lt', eq') = (lt ^ eq lt', eq eq') (no eq for the node holding
// bit 0).
// LessThanZero, with one comparison tuple per value (ltz_layout.h):
//   round 1  open c; the G = ceil((l-1)/4) group nodes (groups of 4 positions) are local:
//            the tuple carries the ANDs of every subset of each group's r bits, and with c
//            public a group's (lt, eq) is a public combination of them (group_nodes.h);
//   round 2  (the combination round) the group nodes of each super-node of k >= 2 groups
//            are opened masked by fresh dealer bits; the super-node's (lt, eq) =
//            (XOR_j lt_j prod_{i>j} eq_i, prod_i eq_i) is then a public combination of the
//            tuple's mask monomials (all local);
//   round 3  the fused root over the m super-nodes (m = 2, 3 or 4): it opens u = lt_top ^
//            r_top, the eq's and lt's masked by fresh bits, and [x < 0] = c_top ^ u ^ R
//            (R = sum_q lt_q prod_{p>q} eq_p) is a public combination of the tuple's
//            arithmetic monomials of those masks: the result is arithmetic, no conversion.
// For G <= 4 (l <= 17) every super-node is one group node and round 2 is skipped.
// MsbBits (binary result: msb_bits.cc) keeps the edaBit + AND-level path: the group nodes
// are combined pairwise, one AND batch per level, down to one.
// Bits -> arithmetic with a daBit ([rho] in both domains): open e = b ^ rho (1 bit), then
// [b] = e + (1 - 2e) [rho].
//
// Cost per party for n values (all-to-all opening; each figure is sent to each of the two
// peers), with B = OpenBytes<P>(l) bytes per opened value:
//   LessThanZero: LtzRounds(l) rounds (2 for l <= 17, 3 up to 64);
//                 B n + ceil(K n / 8) + ceil((2m - 1) n / 8) bytes, K = the combination
//                 round's bits per value (LtzShapeFor(l).combine_bits: 31 for l = 64, 19 for
//                 l = 40, 15 for l = 32; 0 without that round)
//   MsbBits:      1 + ceil(log2 G) rounds (opening, AND levels down to one node)
//   BitToArith:   1 round; ceil(n/8) bytes
// Exact (no probabilistic error) for |x| < 2^(l-1): LessThan(x, y) needs |x - y| < 2^(l-1).
#pragma once

#include <functional>
#include <vector>

#include "mpc/compare/binary_context.h"

namespace mpcache::mpc {

// The shape of an l-bit comparison: group nodes, how many of them each super-node of the
// combination round takes (bottom to top), the bits opened per value in that round (0
// without it) and by the fused root, and rounds (the opening, the combination round when
// some super-node has two or more groups, the fused root).
struct LtzShape {
  int groups = 0;
  std::vector<int> supers;
  int combine_bits = 0;
  int root_bits = 0;
  int rounds = 0;
};
LtzShape LtzShapeFor(int bits);
int LtzRounds(int bits = 64);
inline constexpr int kLtzRounds = 3;  // l = 64
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
