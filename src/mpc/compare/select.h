// Secure max, argmax (value and secret one-hot) and top-k over the rows of a rows x cols
// matrix of shares (row-major), all rows batched together.
//
// RowMax: fixed_math's RowMax on SecureBackend (the plaintext twin runs the same template):
//   a 4-ary tournament, ceil(log4 cols) levels, each one comparison batch of all pairs in
//   every group of 4 (kLtzRounds = 5 rounds) + two product batches (one if the level has
//   width 2): 7 rounds per level.
// RowArgMax: a tournament of adjacent pairs (2i, 2i+1) so every candidate stands for a
//   contiguous range of columns and ties go to the lower index (the first maximum wins,
//   like a plaintext scan). Each candidate carries its one-hot vector restricted to its
//   range; merging a (range A) and b (range B) with s = [a < b]:
//     max = a - s (a - b),  onehot = (oh_a - s oh_a) on A, s oh_b on B,
//   i.e. one product batch of rows * (pairs + paired columns) elements after the
//   comparison: per level 9 rounds, and cols products per row in all.
// RowTopK: k rounds of RowArgMax; after each, the winner is pushed down by 2^60 (local:
//   x -= 2^60 onehot), so the next round picks the best of the rest and ties keep going to
//   the lower index. Cost k times RowArgMax: k * 9 * ceil(log2 cols) rounds. Chosen over a
//   sorting network (O(log^2 cols) comparison rounds but cols log^2 cols comparisons per
//   row) for the small k of attention-block selection; docs/comparison.md has the numbers.
// Values must satisfy |x| < 2^59 (fixed-point activations are far smaller) and k <= cols.
#pragma once

#include "mpc/compare/secure_backend.h"

namespace mpcache::mpc {

// Theory for RowArgMax (each figure: sent by each party to each of its 2 peers); RowTopK
// costs k times as much.
std::uint64_t ArgMaxRounds(std::size_t cols);
std::uint64_t ArgMaxBytesPerPeer(std::size_t rows, std::size_t cols);

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
                         std::size_t cols);

template <typename P>
Result<ArgMaxResult<P>> RowArgMax(BinaryContext<P>& ctx, const Shares<P>& x, std::size_t rows,
                                  std::size_t cols);

template <typename P>
Result<TopKResult<P>> RowTopK(BinaryContext<P>& ctx, const Shares<P>& x, std::size_t rows,
                              std::size_t cols, std::size_t k);

}  // namespace mpcache::mpc
