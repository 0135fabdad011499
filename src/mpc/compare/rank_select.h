// Top-k in a constant number of rounds (independent of k and of the row length), for the
// cluster selection of MPCache (issue 12), where RowTopK's k argmax tournaments in a row
// (k * ArgMaxRounds(cols): 1 216 rounds for 128 clusters keeping half) are too deep.
//
// RowTopKByRank, per row of cols values:
//   1. every pair a < b compared at once: lt_ab = [x_a < x_b] (LessThan, `bits`-bit values:
//      LtzRounds(bits) rounds, cols (cols - 1) / 2 comparisons);
//   2. rank_i = #{a < i : x_a >= x_i} + #{b > i : x_b > x_i} (local sums: ties go to the
//      lower index, so the ranks are a permutation of 0 .. cols - 1, as a stable sort);
//   3. the selection S[j][i] = [rank_i == j] = [rank_i - j < 1] - [rank_i - j < 0] for
//      j < k: 2 k cols comparisons of RankBits(cols) bits, one batch;
//   4. values[j] = sum_i S[j][i] x_i: k cols products, 1 round.
// Rounds: LtzRounds(bits) + LtzRounds(RankBits(cols)) + 1, whatever k (RankTopKRounds;
// for 64-bit values and 128 columns 3 + 2 + 1 = 6 against RowTopK's 64 x 19 = 1 216 when
// keeping half; tests assert both). Exact for
// |x_a - x_b| < 2^(bits - 1). Cheaper in bytes than RowTopK when cols is small and k large
// (the crossover: docs/selection.md); same result (TopKResult: values in decreasing order,
// ties to the lower index, one-hot per rank).
#pragma once

#include "mpc/compare/select.h"

namespace mpcache::mpc {

// Comparison width of the ranks' equality tests for a row of `cols` values.
int RankBits(std::size_t cols);
std::uint64_t RankTopKRounds(std::size_t cols, int bits = 64);
// Bytes each party sends to EACH peer, with comparison openings of OpenBytes<P>(bits) and
// OpenBytes<P>(RankBits(cols)) and product openings of OpenBytes<P>() per value.
std::uint64_t RankTopKBytesPerPeer(std::size_t rows, std::size_t cols, std::size_t k, int bits,
                                   std::uint64_t cmp_open_bytes, std::uint64_t rank_open_bytes,
                                   std::uint64_t mul_open_bytes);

// Steps 1-3 only: the selection (rows x k x cols, one-hot per rank), without the values:
// LtzRounds(bits) + LtzRounds(RankBits(cols)) rounds (MPCache gathers with it).
template <typename P>
Result<Shares<P>> RowRankSelection(BinaryContext<P>& ctx, const Shares<P>& x, std::size_t rows,
                                   std::size_t cols, std::size_t k, int bits = 64);

template <typename P>
Result<TopKResult<P>> RowTopKByRank(BinaryContext<P>& ctx, const Shares<P>& x, std::size_t rows,
                                    std::size_t cols, std::size_t k, int bits = 64);

}  // namespace mpcache::mpc
