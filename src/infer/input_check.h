// The client's prompt inputs must be one-hot vectors, and the parties check it under MPC
// before they compute with them. The client enters row x = d + r (d the vector it
// broadcast, r a client-owned dealer mask), and nothing else stops a malicious client from
// sending a d for which x has two ones, a 2, or 2^63 in it: a linear mix of embedding rows
// (in private-weights mode a probe of the weights) or values outside the fixed-point range
// every later protocol assumes.
//
// CheckOneHotRows, for rows x_1 .. x_R of width V (vocab), opens only values that are 0 (or
// uniformly masked) for an honest client:
//   round 1: d = x - a for square pairs ([a], [a^2]) (R x V values) together with two
//            dealer randoms [c0], [c1]: their opening is the coin that seeds rho, drawn
//            after every input row was fixed (the client knows neither, and the rows are
//            already in the parties' hands);
//   local:   e_i = x_i^2 - x_i = [a^2] + 2 d [a] + d^2 - [x]  (Beaver squaring);
//            per row: s = sum_i x_i - 1 and t_k = sum_i rho_{k,i} e_i for k = 1 .. kOneHotChecks;
//   round 2: open s and every t_k (R x (1 + kOneHotChecks) values).
// x_i (x_i - 1) = 0 mod 2^64 holds exactly for x_i in {0, 1} (x and x - 1 are coprime), and
// then sum x_i = 1 means one one. Soundness in Z_2^64: if some e_j != 0 has 2-adic
// valuation v (e_j is always even, so 1 <= v <= 63), each t_k is 0 with probability at
// most 2^-(64 - v) <= 1/2 over rho (the attacker's best: entries 2^63 and 2^63 + 1, for
// which e = 2^63 and t_k = 2^63 (rho_a + rho_b) is 0 for half of all rho), so
// kOneHotChecks = 40 independent combinations fail to catch it with probability 2^-40.
// A nonzero s or t is refused only after the MAC checks of both domains passed (the
// openings and the client's broadcast d are then known to be the ones every party saw), so
// the refusal blames the client, not a party. Honest clients pay 2 rounds, R x V squares and
// B x (R x V + 2 + R x 41) bytes to each peer per chunk of rows, B = OpenBytes<P>() (16
// malicious, 8 semi-honest; docs/secure-llama.md).
#pragma once

#include <cstddef>

#include "mpc/compare/binary_context.h"
#include "mpc/share.h"

namespace mpcache::infer {

inline constexpr int kOneHotChecks = 40;

// `rows`: R x width shares (row-major), the client's inputs for prompt positions
// first_pos .. first_pos + R - 1. Ok when every row is one-hot; InvalidArgument naming the
// first bad position otherwise (after CheckAllMacs passed; its error if it did not).
template <typename P>
Status CheckOneHotRows(mpc::BinaryContext<P>& bctx, const mpc::Shares<P>& rows, std::size_t width,
                       int first_pos);

}  // namespace mpcache::infer
