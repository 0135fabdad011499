// Big cases (label `heavy`): the benchmark sizes, checked for exactness and for the
// stated rounds and bytes.
#include <gtest/gtest.h>

#include "common/prg.h"
#include "harness.h"
#include "mpc/beaver.h"
#include "mpc/io.h"
#include "mpc/matmul.h"

namespace mpcache::mpc {
namespace {

using testing::ExpectAllOk;
using testing::Harness;
using testing::Share;
using Vec = std::vector<std::uint64_t>;

template <typename P>
class HeavyTest : public ::testing::Test {};
using Modes = ::testing::Types<SemiHonest, Spdz2k>;
TYPED_TEST_SUITE(HeavyTest, Modes);

TYPED_TEST(HeavyTest, MillionProductsOneRound) {
  using P = TypeParam;
  Harness<P> h(60);
  const std::size_t n = 1 << 20;
  Prg prg(TestSeed(61));
  Vec x(n), y(n);
  for (auto& v : x) v = prg.NextU64();
  for (auto& v : y) v = prg.NextU64();
  auto res = h.Run([&](Context<P>& ctx) -> Result<Vec> {
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> a, Share(ctx, x));
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> b, Share(ctx, y));
    ctx.stats().Reset();
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> z, Mul(ctx, a, b));
    const auto c = ctx.stats().Total();
    // Two openings (x - a, y - b) to each of 2 peers, OpenBytes<P>() bytes each.
    if (c.rounds != 1 || c.bytes_sent != 2 * 2 * OpenBytes<P>() * n) return Internal("mul cost");
    MPCACHE_ASSIGN_OR_RETURN(Vec v, ctx.Open(z));
    MPCACHE_RETURN_IF_ERROR(ctx.CheckMacs());
    return v;
  });
  ASSERT_NO_FATAL_FAILURE(ExpectAllOk(res));
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(res[0]->at(i), x[i] * y[i]) << i;
}

TYPED_TEST(HeavyTest, FixedMaskVectorTimesMatrix) {
  using P = TypeParam;
  Harness<P> h(62);
  const std::size_t k = 1024, n = 1024;
  Prg prg(TestSeed(63));
  Vec x(k), w(k * n);
  for (auto& v : x) v = prg.NextU64();
  for (auto& v : w) v = prg.NextU64();
  auto res = h.Run([&](Context<P>& ctx) -> Result<Vec> {
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> sx, Share(ctx, x));
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> sw, Share(ctx, w));
    MPCACHE_ASSIGN_OR_RETURN(FixedOperand<P> fw, MaskFixed(ctx, std::move(sw), k, n));
    ctx.stats().Reset();
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> z, MatMul(ctx, sx, 1, fw));
    const auto c = ctx.stats().Total();
    if (c.rounds != 1 || c.bytes_sent != 2 * OpenBytes<P>() * k) return Internal("matmul cost");
    MPCACHE_ASSIGN_OR_RETURN(Vec v, ctx.Open(z));
    MPCACHE_RETURN_IF_ERROR(ctx.CheckMacs());
    return v;
  });
  ASSERT_NO_FATAL_FAILURE(ExpectAllOk(res));
  Vec want(n, 0);
  for (std::size_t t = 0; t < k; ++t)
    for (std::size_t j = 0; j < n; ++j) want[j] += x[t] * w[t * n + j];
  EXPECT_EQ(res[1].value(), want);
}

}  // namespace
}  // namespace mpcache::mpc
