// SecureBackend's whole-vector paths (UniformProduct, OneSourceTrunc, the column loops of
// FusedBatch::Exchange) make exactly the share words of the element-by-element paths: the
// same chain of products and truncations runs once on uniform vectors (the fast paths) and
// once on the same vectors with a public element appended (which sends every call down the
// general path, the public element being local), from the same seed; the first n shares of
// every party (value and MAC words) must be identical, as must the opened values and the
// traffic. The pinned wire transcripts check this end to end; this test names the paths.
// And GatherSum (the row max's pairs, wins and group sums) against its plaintext twin.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "cmp_harness.h"
#include "common/fixed_backend.h"
#include "mpc/compare/secure_backend.h"

namespace mpcache::mpc {
namespace {

using testing::CmpHarness;
using testing::ExpectAllOk;
using testing::RevealChecked;
using testing::ShareVec;
using testing::Vec;

template <typename P>
class UniformPathTest : public ::testing::Test {};
using Modes = ::testing::Types<SemiHonest, Spdz2k>;
TYPED_TEST_SUITE(UniformPathTest, Modes);

template <typename P>
struct ChainRun {
  Shares<P> shares;  // this party's shares of the result
  Vec opened;
  std::uint64_t bytes = 0, rounds = 0;
};

// x y -> T_18 -> T_2 (composes) -> squared -> T_18 -> times x; with `pad`, every operand
// carries one more element, a public one.
template <typename P>
std::vector<Result<ChainRun<P>>> RunChain(const Vec& x, const Vec& y, bool pad) {
  CmpHarness<P> h(23);
  return h.Run([&](BinaryContext<P>& ctx) -> Result<ChainRun<P>> {
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> xs, ShareVec(ctx.arith(), x));
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> ys, ShareVec(ctx.arith(), y));
    const auto before = ctx.arith().stats().Total();
    SecureBackend<P> be(ctx);
    using V = typename SecureBackend<P>::Vec;
    V a = xs, b = ys;
    if (pad) {
      const V zero = be.MulConst(be.Gather(a, std::vector<std::size_t>{0}), 0);
      a = be.Concat(a, be.AddConst(zero, 5));
      b = be.Concat(b, be.AddConst(zero, 7));
    }
    const V t = be.Trunc(be.Trunc(be.Mul(a, b), 18), 2);
    const V out = be.Mul(a, be.Trunc(be.Square(t), 18));
    Shares<P> s = be.Materialize(out);
    if (!be.status().ok()) return be.status().error();
    const auto after = ctx.arith().stats().Total();
    ChainRun<P> r;
    r.shares = s.Slice(0, x.size());
    r.bytes = after.bytes_sent - before.bytes_sent;
    r.rounds = after.rounds - before.rounds;
    MPCACHE_ASSIGN_OR_RETURN(r.opened, RevealChecked(ctx, s));
    r.opened.resize(x.size());
    return r;
  });
}

TYPED_TEST(UniformPathTest, WholeVectorPathsMakeTheGeneralPathsShareWords) {
  using P = TypeParam;
  Vec x, y;
  for (std::uint64_t i = 0; i < 300; ++i) {
    x.push_back((i * 7919 + 3) % (std::uint64_t{1} << 20));
    y.push_back(0 - ((i * 104729 + 11) % (std::uint64_t{1} << 19)));
  }
  const auto fast = RunChain<P>(x, y, false);
  const auto general = RunChain<P>(x, y, true);
  ASSERT_NO_FATAL_FAILURE(ExpectAllOk(fast));
  ASSERT_NO_FATAL_FAILURE(ExpectAllOk(general));
  for (std::size_t p = 0; p < 3; ++p) {
    const ChainRun<P>& f = fast[p].value();
    const ChainRun<P>& g = general[p].value();
    EXPECT_TRUE(f.shares.v == g.shares.v) << "party " << p << ": value shares differ";
    if constexpr (P::kMalicious) {
      EXPECT_TRUE(f.shares.m == g.shares.m) << "party " << p << ": MAC shares differ";
    }
    EXPECT_EQ(f.opened, g.opened);
    EXPECT_EQ(f.rounds, g.rounds);
    // The public element is local: it costs nothing on the wire either.
    EXPECT_EQ(f.bytes, g.bytes);
  }
  // And the chain computes what it should: x (T(T(T(x y)/4)^2)) within a few units.
  const Vec& got = fast[0].value().opened;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double xy = static_cast<double>(static_cast<std::int64_t>(x[i])) *
                      static_cast<double>(static_cast<std::int64_t>(y[i]));
    const double t = xy / (1 << 20);
    const double want = static_cast<double>(static_cast<std::int64_t>(x[i])) * (t * t / (1 << 18));
    const double err = std::abs(static_cast<double>(static_cast<std::int64_t>(got[i])) - want);
    // Each truncation is off by at most one unit: t by ~2, t^2 / 2^18 by 4 |t| / 2^18 + 1.
    const double ax = std::abs(static_cast<double>(static_cast<std::int64_t>(x[i])));
    EXPECT_LE(err, ax * (2.0 + 4.0 * std::abs(t) / (1 << 18)) + 1.0) << "i = " << i;
  }
}

// GatherSum against its plaintext twin, exactly: rows over plain shares and pending
// truncations (whose terms it scales and carries), with zero, one and minus-one coefficients
// and an element used twice; and the same rows over a vector with no pending term (its own
// path) whose second half is public constants; local (no round, no byte).
TYPED_TEST(UniformPathTest, GatherSumEqualsItsPlaintextTwinAndIsLocal) {
  using P = TypeParam;
  Vec x;
  for (std::uint64_t i = 0; i < 64; ++i) x.push_back((i * 2654435761U) % 100000);
  SparseRows m;
  for (std::size_t r = 0; r < 40; ++r) {
    for (std::size_t k = 0; k < r % 5 + 1; ++k) {
      const std::size_t j = (r * 37 + k * 11) % 128;  // 0..63 plain, 64..127 truncated
      const Ring64 c = k == 1 ? 0 : k == 2 ? fixed_detail::Neg(1) : r + k + 1;
      m.Add(j, c);
      if (k == 3) m.Add(j, 5);  // the same element twice in a row
    }
    m.EndRow();
  }
  CmpHarness<P> h(29);
  struct Out {
    Vec sums, trunc, plain_sums;
    std::uint64_t rounds = 1, bytes = 1;
  };
  auto res = h.Run([&](BinaryContext<P>& ctx) -> Result<Out> {
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> xs, ShareVec(ctx.arith(), x));
    SecureBackend<P> be(ctx);
    using V = typename SecureBackend<P>::Vec;
    const V t = be.Trunc(V(xs), 4);
    const V pool = be.Concat(V(xs), t);
    const auto before = ctx.arith().stats().Total();
    const V sums = be.GatherSum(pool, m);
    const V consts = be.AddConst(be.MulConst(V(xs), 0), 9);
    const V plain_sums = be.GatherSum(be.Concat(V(xs), consts), m);
    const auto after = ctx.arith().stats().Total();
    Out o;
    o.rounds = after.rounds - before.rounds;
    o.bytes = after.bytes_sent - before.bytes_sent;
    Shares<P> ss = be.Materialize(sums);
    Shares<P> ts = be.Materialize(t);
    Shares<P> ps = be.Materialize(plain_sums);
    if (!be.status().ok()) return be.status().error();
    MPCACHE_ASSIGN_OR_RETURN(o.plain_sums, RevealChecked(ctx, ps));
    MPCACHE_ASSIGN_OR_RETURN(o.sums, RevealChecked(ctx, ss));
    MPCACHE_ASSIGN_OR_RETURN(o.trunc, RevealChecked(ctx, ts));
    return o;
  });
  ASSERT_NO_FATAL_FAILURE(ExpectAllOk(res));
  const Out& o = res[0].value();
  EXPECT_EQ(o.rounds, 0u);
  EXPECT_EQ(o.bytes, 0u);
  Vec pool = x;
  pool.insert(pool.end(), o.trunc.begin(), o.trunc.end());
  for (std::size_t i = 0; i < x.size(); ++i) {
    EXPECT_LE(o.trunc[i] - (x[i] >> 4), 1u) << "the truncation itself, i = " << i;
  }
  const PlainBackend pb;
  EXPECT_EQ(o.sums, pb.GatherSum(pool, m));
  Vec plain_pool = x;
  plain_pool.resize(2 * x.size(), 9);
  EXPECT_EQ(o.plain_sums, pb.GatherSum(plain_pool, m));
}

}  // namespace
}  // namespace mpcache::mpc
