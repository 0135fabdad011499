#include "mpc/compare/rank_select.h"

#include <bit>
#include <string>

#include "mpc/beaver.h"
#include "mpc/compare/compare.h"

namespace mpcache::mpc {

int RankBits(std::size_t cols) {
  // rank - j - 1 lies in [-cols, cols): |.| < 2^(b - 1) needs b - 1 >= bit_width(cols).
  return std::max(kMinCompareBits, static_cast<int>(std::bit_width(cols)) + 1);
}

std::uint64_t RankTopKRounds(std::size_t cols, int bits) {
  const std::uint64_t pairs = cols > 1 ? static_cast<std::uint64_t>(LtzRounds(bits)) : 0;
  return pairs + static_cast<std::uint64_t>(LtzRounds(RankBits(cols))) + 1;
}

std::uint64_t RankTopKBytesPerPeer(std::size_t rows, std::size_t cols, std::size_t k, int bits,
                                   std::uint64_t cmp_open_bytes, std::uint64_t rank_open_bytes,
                                   std::uint64_t mul_open_bytes) {
  const std::uint64_t pairs = rows * (cols * (cols - 1) / 2);
  std::uint64_t bytes = pairs > 0 ? LtzBytesPerPeer(pairs, bits, cmp_open_bytes) : 0;
  bytes += LtzBytesPerPeer(2 * rows * k * cols, RankBits(cols), rank_open_bytes);
  bytes += 2 * mul_open_bytes * rows * k * cols;  // Beaver: d and e per product
  return bytes;
}

template <typename P>
Result<Shares<P>> RowRankSelection(BinaryContext<P>& ctx, const Shares<P>& x, std::size_t rows,
                                   std::size_t cols, std::size_t k, int bits) {
  if (cols == 0 || rows * cols != x.size()) {
    return InvalidArgument("a " + std::to_string(rows) + " x " + std::to_string(cols) +
                           " selection over " + std::to_string(x.size()) + " values");
  }
  MPCACHE_RETURN_IF_ERROR(CheckCompareBits(bits));
  if (k == 0 || k > cols) {
    return InvalidArgument("top-" + std::to_string(k) + " of " + std::to_string(cols) + " columns");
  }
  const bool mal = P::kMalicious;
  // 1. every pair (a < b) of every row: lt_ab = [x_a < x_b] = [x_a - x_b < 0].
  const std::size_t pairs = cols * (cols - 1) / 2;
  Shares<P> lt;
  if (pairs > 0) {
    Shares<P> diff(rows * pairs);
    std::size_t at = 0;
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t a = 0; a < cols; ++a) {
        for (std::size_t b = a + 1; b < cols; ++b, ++at) {
          diff.v[at] = x.v[r * cols + a] - x.v[r * cols + b];
          if constexpr (mal) diff.m[at] = x.m[r * cols + a] - x.m[r * cols + b];
        }
      }
    }
    MPCACHE_ASSIGN_OR_RETURN(lt, LessThanZero(ctx, diff, bits));
  }
  // 2. rank_i = sum_{a < i} (1 - lt_ai) + sum_{b > i} lt_ib (local; the 1s are public).
  Shares<P> rank(rows * cols);
  std::vector<std::uint64_t> ones(rows * cols, 0);
  {
    std::size_t at = 0;
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t a = 0; a < cols; ++a) {
        for (std::size_t b = a + 1; b < cols; ++b, ++at) {
          const std::size_t ia = r * cols + a, ib = r * cols + b;
          rank.v[ia] += lt.v[at];  // b beats a when x_a < x_b
          rank.v[ib] -= lt.v[at];  // a beats b otherwise: + (1 - lt)
          if constexpr (mal) {
            rank.m[ia] += lt.m[at];
            rank.m[ib] -= lt.m[at];
          }
          ones[ib] += 1;
        }
      }
    }
  }
  AddPublicInPlace(ctx.arith().key(), rank, ones);
  // 3. S[j][i] = [rank_i - j < 1] - [rank_i - j < 0], both tests in one batch.
  const std::size_t n = rows * k * cols;
  Shares<P> tests(2 * n);
  std::vector<std::uint64_t> offsets(2 * n);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t j = 0; j < k; ++j) {
      for (std::size_t i = 0; i < cols; ++i) {
        const std::size_t e = (r * k + j) * cols + i, src = r * cols + i;
        for (std::size_t h = 0; h < 2; ++h) {
          tests.v[2 * e + h] = rank.v[src];
          if constexpr (mal) tests.m[2 * e + h] = rank.m[src];
          offsets[2 * e + h] = 0 - (j + (h == 0 ? 1 : 0));  // rank - j - 1, rank - j
        }
      }
    }
  }
  AddPublicInPlace(ctx.arith().key(), tests, offsets);
  MPCACHE_ASSIGN_OR_RETURN(Shares<P> below, LessThanZero(ctx, tests, RankBits(cols)));
  Shares<P> selection(n);
  for (std::size_t e = 0; e < n; ++e) {
    selection.v[e] = below.v[2 * e] - below.v[2 * e + 1];
    if constexpr (mal) selection.m[e] = below.m[2 * e] - below.m[2 * e + 1];
  }
  return selection;
}

template <typename P>
Result<TopKResult<P>> RowTopKByRank(BinaryContext<P>& ctx, const Shares<P>& x, std::size_t rows,
                                    std::size_t cols, std::size_t k, int bits) {
  const bool mal = P::kMalicious;
  TopKResult<P> out;
  MPCACHE_ASSIGN_OR_RETURN(out.selection, RowRankSelection(ctx, x, rows, cols, k, bits));
  const std::size_t n = rows * k * cols;
  Shares<P> xs(n);  // x_i repeated for every rank j
  for (std::size_t e = 0; e < n; ++e) {
    const std::size_t r = e / (k * cols), i = e % cols;
    xs.v[e] = x.v[r * cols + i];
    if constexpr (mal) xs.m[e] = x.m[r * cols + i];
  }
  // 4. values[j] = sum_i S[j][i] x_i.
  MPCACHE_ASSIGN_OR_RETURN(Shares<P> picked, Mul(ctx.arith(), out.selection, xs));
  out.values = Shares<P>(rows * k);
  for (std::size_t e = 0; e < n; ++e) {
    out.values.v[e / cols] += picked.v[e];
    if constexpr (mal) out.values.m[e / cols] += picked.m[e];
  }
  return out;
}

template Result<Shares<SemiHonest>> RowRankSelection<SemiHonest>(BinaryContext<SemiHonest>&,
                                                                 const Shares<SemiHonest>&,
                                                                 std::size_t, std::size_t,
                                                                 std::size_t, int);
template Result<Shares<Spdz2k>> RowRankSelection<Spdz2k>(BinaryContext<Spdz2k>&,
                                                         const Shares<Spdz2k>&, std::size_t,
                                                         std::size_t, std::size_t, int);
template Result<TopKResult<SemiHonest>> RowTopKByRank<SemiHonest>(BinaryContext<SemiHonest>&,
                                                                  const Shares<SemiHonest>&,
                                                                  std::size_t, std::size_t,
                                                                  std::size_t, int);
template Result<TopKResult<Spdz2k>> RowTopKByRank<Spdz2k>(BinaryContext<Spdz2k>&,
                                                          const Shares<Spdz2k>&, std::size_t,
                                                          std::size_t, std::size_t, int);

}  // namespace mpcache::mpc
