// Secure max, argmax (value and secret one-hot) and top-k over the rows of a rows x cols
// matrix of shares (row-major), all rows batched together.
//
// RowMax: fixed_math's RowMax on SecureBackend (the plaintext twin runs the same template):
//   a 4-ary tournament, ceil(log4 cols) levels, each one comparison batch of all pairs in
//   every group of 4 (LtzRounds(bits): 3 rounds, 2 for bits <= 17) + two product batches
//   (one if the level has width 2): 5 rounds per level.
// RowArgMax: a tournament of groups of 4 consecutive candidates (the last group of a row may
//   be smaller), so every candidate stands for a contiguous range of columns and ties go to
//   the lower index (the first maximum wins, like a plaintext scan). Per level: one
//   comparison batch of every pair in every group; member i wins with w_i = prod_{j != i}
//   [x_i beats x_j] (>= towards later members, > towards earlier ones: exactly one winner),
//   and its payload (value, one-hot restricted to its range) is multiplied by w_i as
//   (b0 b1)(b2 payload): two product batches (one when the level has width 2). The winner's
//   value is the group's sum of w_i x_i. 5 rounds per level (ArgMaxRounds), about 2 cols
//   products per row per level (ArgMaxBytesPerPeer).
// RowTopK: k rounds of RowArgMax; after each, the winner is pushed down by 2^(bits-2)
//   (local: x -= 2^(bits-2) onehot), so the next round picks the best of the rest and ties
//   keep going to the lower index. Cost k times RowArgMax: k * 5 * ceil(log4 cols) rounds. Chosen
//   over a sorting network (O(log^2 cols) comparison rounds but cols log^2 cols comparisons per
//   row) for the small k of attention-block selection; docs/selection.md has the numbers.
// Every comparison is of `bits`-bit values (compare.h; 64 = exact for the whole ring):
// differences must satisfy |x - y| < 2^(bits-1), and for RowTopK |x| < 2^(bits-3)
// (fixed-point activations are far smaller); k <= cols.
#pragma once

#include "mpc/compare/secure_backend.h"

namespace mpcache::mpc {

// Theory for RowArgMax (each figure: sent by each party to each of its 2 peers); RowTopK
// costs k times as much.
std::uint64_t ArgMaxRounds(std::size_t cols, int bits = 64);
// With comparison openings of cmp_open_bytes (OpenBytes<P>(bits)) and product openings of
// mul_open_bytes (OpenBytes<P>()) per value.
std::uint64_t ArgMaxBytesPerPeer(std::size_t rows, std::size_t cols, int bits,
                                 std::uint64_t cmp_open_bytes, std::uint64_t mul_open_bytes);

template <typename P>
struct ArgMaxResult {
  Shares<P> max;      // rows
  Shares<P> one_hot;  // rows x cols, 1 at the (first) maximum of each row
};

template <typename P>
struct TopKResult {
  Shares<P> values;     // rows x k, in decreasing order
  Shares<P> selection;  // rows x k x cols: row (r, j) is the one-hot of the j-th largest
};

template <typename P>
Result<Shares<P>> RowMax(BinaryContext<P>& ctx, const Shares<P>& x, std::size_t rows,
                         std::size_t cols, int bits = 64);

template <typename P>
Result<ArgMaxResult<P>> RowArgMax(BinaryContext<P>& ctx, const Shares<P>& x, std::size_t rows,
                                  std::size_t cols, int bits = 64);

template <typename P>
Result<TopKResult<P>> RowTopK(BinaryContext<P>& ctx, const Shares<P>& x, std::size_t rows,
                              std::size_t cols, std::size_t k, int bits = 64);

}  // namespace mpcache::mpc
