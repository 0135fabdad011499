// Secure max / argmax / top-k against plaintext, ties broken by lowest index, exact costs.
#include "mpc/compare/select.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>

#include "cmp_harness.h"
#include "common/fixed_math.h"
#include "mpc/compare/rank_select.h"

namespace mpcache::mpc {
namespace {

using testing::CmpHarness;
using testing::ExpectAllOk;
using testing::RevealChecked;
using testing::ShareVec;
using testing::Vec;

template <typename P>
class SelectTest : public ::testing::Test {};
using Modes = ::testing::Types<SemiHonest, Spdz2k>;
TYPED_TEST_SUITE(SelectTest, Modes);

// Fixed-point values (f = 18) in the logit range, with ties and one-LSB gaps.
Vec Values(std::size_t rows, std::size_t cols, std::uint64_t seed) {
  Prg prg(TestSeed(seed));
  Vec v;
  for (std::size_t i = 0; i < rows * cols; ++i) {
    const std::int64_t base = static_cast<std::int64_t>(prg.Uniform(1 << 12)) - 2048;
    std::int64_t x = base * (1 << 12);
    if (i % 5 == 3) x = static_cast<std::int64_t>(v[i - 1]);      // tie with the previous one
    if (i % 5 == 4) x = static_cast<std::int64_t>(v[i - 1]) + 1;  // one LSB above
    v.push_back(static_cast<std::uint64_t>(x));
  }
  return v;
}

std::int64_t S(std::uint64_t x) {
  return static_cast<std::int64_t>(x);
}

TYPED_TEST(SelectTest, MaxAndArgMaxExact) {
  using P = TypeParam;
  for (int bits : {64, 40})
    for (std::size_t cols : {1, 2, 3, 5, 7, 16, 37}) {
      const int L = LtzRounds(bits);
      const std::size_t rows = 3;
      Vec x = Values(rows, cols, 100 + cols);
      if (cols >= 5) x[cols + 4] = x[cols + 1];  // a tie for the maximum in row 1 (maybe)
      CmpHarness<P> h(30);
      struct Out {
        Vec max, max2, onehot;
        std::uint64_t rounds = 0, bytes = 0;
      };
      auto res = h.Run([&](BinaryContext<P>& ctx) -> Result<Out> {
        MPCACHE_ASSIGN_OR_RETURN(Shares<P> xs, ShareVec(ctx.arith(), x));
        Out out;
        const auto before = ctx.arith().stats().Total();
        MPCACHE_ASSIGN_OR_RETURN(ArgMaxResult<P> am, RowArgMax(ctx, xs, rows, cols, bits));
        out.rounds = ctx.arith().stats().Total().rounds - before.rounds;
        out.bytes = ctx.arith().stats().Total().bytes_sent - before.bytes_sent;
        MPCACHE_ASSIGN_OR_RETURN(Shares<P> mx, RowMax(ctx, xs, rows, cols, bits));
        MPCACHE_ASSIGN_OR_RETURN(out.max, RevealChecked(ctx, am.max));
        MPCACHE_ASSIGN_OR_RETURN(out.max2, RevealChecked(ctx, mx));
        MPCACHE_ASSIGN_OR_RETURN(out.onehot, RevealChecked(ctx, am.one_hot));
        return out;
      });
      ASSERT_NO_FATAL_FAILURE(ExpectAllOk(res));
      const Out& o = res[0].value();
      // 4-ary tournament (ArgMaxRounds): a level of width w > 2 costs an LTZ + 2 product
      // rounds, a level of width 2 an LTZ + 1. Widths: 2 | 3 | 5, 2 | 7, 2 | 16, 4 | 37, 10, 3.
      const std::map<std::size_t, std::uint64_t> want_rounds = {{1, 0},
                                                                {2, L + 1},
                                                                {3, L + 2},
                                                                {5, (L + 2) + (L + 1)},
                                                                {7, (L + 2) + (L + 1)},
                                                                {16, 2 * (L + 2)},
                                                                {37, 3 * (L + 2)}};
      EXPECT_EQ(o.rounds, want_rounds.at(cols));
      EXPECT_EQ(o.rounds, ArgMaxRounds(cols, bits));
      for (const auto& r : res) {
        EXPECT_EQ(r->bytes,
                  2 * ArgMaxBytesPerPeer(rows, cols, bits, OpenBytes<P>(bits), OpenBytes<P>()));
      }
      for (std::size_t r = 0; r < rows; ++r) {
        std::size_t best = 0;
        for (std::size_t c = 1; c < cols; ++c) {
          if (S(x[r * cols + c]) > S(x[r * cols + best])) best = c;  // first maximum
        }
        EXPECT_EQ(o.max[r], x[r * cols + best]);
        EXPECT_EQ(o.max2[r], x[r * cols + best]);
        for (std::size_t c = 0; c < cols; ++c) {
          EXPECT_EQ(o.onehot[r * cols + c], c == best ? 1u : 0u) << "cols " << cols << " r " << r;
        }
      }
    }
}

// Runs a top-k (RowTopK or RowTopKByRank) on x, checks every party's rounds and bytes
// against `rounds` / `bytes`, and the revealed values and one-hots against the plaintext
// twin: a stable sort (ties to the lower index).
template <typename P, typename TopK>
void ExpectTopK(const Vec& x, std::size_t rows, std::size_t cols, std::size_t k, TopK topk,
                std::uint64_t rounds, std::uint64_t bytes) {
  CmpHarness<P> h(31);
  struct Out {
    Vec values, sel;
    net::PhaseCounters cost;
  };
  auto res = h.Run([&](BinaryContext<P>& ctx) -> Result<Out> {
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> xs, ShareVec(ctx.arith(), x));
    const auto before = ctx.arith().stats().Total();
    MPCACHE_ASSIGN_OR_RETURN(TopKResult<P> t, topk(ctx, xs));
    Out out;
    out.cost = ctx.arith().stats().Total();
    out.cost.rounds -= before.rounds;
    out.cost.bytes_sent -= before.bytes_sent;
    MPCACHE_ASSIGN_OR_RETURN(out.values, RevealChecked(ctx, t.values));
    MPCACHE_ASSIGN_OR_RETURN(out.sel, RevealChecked(ctx, t.selection));
    return out;
  });
  ASSERT_NO_FATAL_FAILURE(ExpectAllOk(res));
  const Out& o = res[0].value();
  for (const auto& r : res) {
    EXPECT_EQ(r->cost.rounds, rounds) << "cols " << cols << " k " << k;
    EXPECT_EQ(r->cost.bytes_sent, bytes) << "cols " << cols << " k " << k;
  }
  for (std::size_t r = 0; r < rows; ++r) {
    std::vector<std::size_t> idx(cols);
    std::iota(idx.begin(), idx.end(), 0);
    std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
      return S(x[r * cols + a]) > S(x[r * cols + b]);
    });
    for (std::size_t j = 0; j < k; ++j) {
      EXPECT_EQ(o.values[r * k + j], x[r * cols + idx[j]]) << "cols " << cols;
      for (std::size_t c = 0; c < cols; ++c) {
        EXPECT_EQ(o.sel[(r * k + j) * cols + c], c == idx[j] ? 1u : 0u)
            << "cols " << cols << " row " << r << " rank " << j << " col " << c;
      }
    }
  }
}

TYPED_TEST(SelectTest, TopKWithTies) {
  using P = TypeParam;
  for (int bits : {64, 40}) {
    const std::size_t rows = 2, cols = 11, k = 4;
    Vec x = Values(rows, cols, 7);
    x[2] = x[5] = x[9] = static_cast<std::uint64_t>(std::int64_t{3000} << 12);  // 3-way tie on top
    ExpectTopK<P>(
        x, rows, cols, k,
        [&](BinaryContext<P>& ctx, const Shares<P>& xs) {
          return RowTopK(ctx, xs, rows, cols, k, bits);
        },
        k * ArgMaxRounds(cols, bits),
        k * 2 * ArgMaxBytesPerPeer(rows, cols, bits, OpenBytes<P>(bits), OpenBytes<P>()));
  }
}

// The constant-round top-k (rank_select.h) against the same plaintext twin, at several k
// including k = cols and a single column, with its rounds and bytes held to the theory; its
// rounds do not depend on k.
TYPED_TEST(SelectTest, TopKByRankWithTiesInConstantRounds) {
  using P = TypeParam;
  struct Case {
    std::size_t rows, cols, k;
    int bits;
  };
  for (const Case& c :
       {Case{2, 11, 4, 64}, Case{1, 11, 11, 40}, Case{3, 1, 1, 64}, Case{1, 40, 20, 64}}) {
    Vec x = Values(c.rows, c.cols, 9);
    if (c.cols > 9) {
      x[2] = x[5] = x[9] = static_cast<std::uint64_t>(std::int64_t{3000} << 12);  // 3-way tie
      for (std::size_t r = 0; r < c.rows; ++r) {  // and a tie at whatever rank in every row
        x[r * c.cols] = x[r * c.cols + c.cols - 1];
      }
    }
    ExpectTopK<P>(
        x, c.rows, c.cols, c.k,
        [&](BinaryContext<P>& ctx, const Shares<P>& xs) {
          return RowTopKByRank(ctx, xs, c.rows, c.cols, c.k, c.bits);
        },
        RankTopKRounds(c.cols, c.bits),
        2 * RankTopKBytesPerPeer(c.rows, c.cols, c.k, c.bits, OpenBytes<P>(c.bits),
                                 OpenBytes<P>(RankBits(c.cols)), OpenBytes<P>()));
  }
  // Rounds independent of k; 128 clusters at 64 bits: 6 rounds (3 + 2 + 1) where RowTopK
  // keeping half takes 64 argmax tournaments of 19 (8 and 27 with the AND-level comparison).
  EXPECT_EQ(RankTopKRounds(128, 64), 6u);
  EXPECT_EQ(64 * ArgMaxRounds(128, 64), 1216u);
}

TEST(SelectArgs, RejectsBadShapes) {
  CmpHarness<SemiHonest> h(32);
  auto res = h.Run([&](BinaryContext<SemiHonest>& ctx) -> Status {
    Shares<SemiHonest> xs(6);
    if (RowArgMax(ctx, xs, 4, 2).ok()) return Internal("accepted 4 x 2 over 6 values");
    if (RowTopK(ctx, xs, 2, 3, 4).ok()) return Internal("accepted k > cols");
    if (RowTopKByRank(ctx, xs, 2, 3, 4).ok()) return Internal("rank: accepted k > cols");
    if (RowTopKByRank(ctx, xs, 2, 3, 0).ok()) return Internal("rank: accepted k = 0");
    if (RowTopKByRank(ctx, xs, 4, 2, 1).ok()) return Internal("rank: accepted 4 x 2 over 6");
    return Status::Ok();
  });
  ASSERT_NO_FATAL_FAILURE(ExpectAllOk(res));
}

}  // namespace
}  // namespace mpcache::mpc
