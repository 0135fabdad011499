// The fixed-point kernels with split-king openings (mpc/context.h, OpenMode::kSplitKing,
// chosen by the role table): the very values of the all-to-all run (the same dealer seeds,
// so the same masks and truncations; the lazy truncations riding the split openings in
// front of their values), one more round per arithmetic opening, the
// backend's theory equal to the measured rounds and bytes at every party, and the bytes
// literals below (measured once; the theory is the backend's own and cannot catch a kernel
// that does more or less than it should).
#include <gtest/gtest.h>

#include <cmath>

#include "cmp_harness.h"
#include "common/fixed_math.h"
#include "mpc/compare/secure_backend.h"

namespace mpcache::mpc {
namespace {

using testing::AllOk;
using testing::CmpHarness;
using testing::RevealChecked;
using testing::ShareVec;
using testing::Vec;

constexpr int kF = 18;
const FixedPoint kFp{kF};

struct Run {
  Vec out;
  std::uint64_t rounds = 0, bytes = 0, theory_rounds = 0, theory_bytes = 0;
  std::uint64_t deferred_in_split = 0;  // deferred values that rode a split opening
};

enum class Kernel { kSiluTimes, kSoftmax, kRmsNorm };

template <typename P>
std::vector<Run> RunKernel(Kernel k, const Vec& x, const Vec& h, bool split) {
  CmpHarness<P> harness(23);
  auto res = harness.Run([&](BinaryContext<P>& ctx) -> Result<Run> {
    if (split) {
      Roles r = RoleTable::StaticRoles(ctx.arith().num_parties());
      r.king = kSplitKing;
      MPCACHE_RETURN_IF_ERROR(ctx.arith().roles().Fill(r));
    }
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> xs, ShareVec(ctx.arith(), x));
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> hs, ShareVec(ctx.arith(), h));
    const auto before = ctx.arith().stats().Total();
    SecureBackend<P> be(ctx);
    const FixedMathParams p{};
    typename SecureBackend<P>::Vec y;
    if (k == Kernel::kSiluTimes) y = SiluTimes(be, p, xs, hs);
    if (k == Kernel::kSoftmax) y = Softmax(be, p, xs, 3, x.size() / 3);
    if (k == Kernel::kRmsNorm) {
      std::vector<Ring64> gains(x.size() / 3, kFp.Encode(0.75));
      y = RmsNorm(be, p, xs, std::span<const Ring64>(gains), 3, x.size() / 3, 1e-5);
    }
    Shares<P> out = be.Materialize(y);
    if (!be.status().ok()) return be.status().error();
    const auto after = ctx.arith().stats().Total();
    Run r;
    r.rounds = after.rounds - before.rounds;
    r.bytes = after.bytes_sent - before.bytes_sent;
    r.theory_rounds = be.theory().rounds;
    r.theory_bytes = be.theory().bytes_sent;
    r.deferred_in_split = ctx.arith().deferred_in_split();
    MPCACHE_ASSIGN_OR_RETURN(r.out, RevealChecked(ctx, out));
    return r;
  });
  if (!AllOk(res)) return {};
  std::vector<Run> runs;
  runs.reserve(res.size());
  for (auto& r : res) runs.push_back(r.value());
  return runs;
}

template <typename P>
class SplitKernelTest : public ::testing::Test {};
using Modes = ::testing::Types<SemiHonest, Spdz2k>;
TYPED_TEST_SUITE(SplitKernelTest, Modes);

Vec Grid(double lo, double hi, std::size_t n) {
  Vec v;
  for (std::size_t i = 0; i < n; ++i) {
    v.push_back(kFp.Encode(lo + (hi - lo) * static_cast<double>(i) / static_cast<double>(n - 1)));
  }
  return v;
}

TYPED_TEST(SplitKernelTest, TheKernelsOpenTheSameValuesForFewerBytes) {
  using P = TypeParam;
  const bool mal = P::kMalicious;
  // Party 0's bytes with split kings, per kernel (measured once, written here).
  struct Case {
    Kernel k;
    Vec x, h;
    std::uint64_t semi_bytes, mal_bytes;
  };
  const std::vector<Case> cases{
      {Kernel::kSiluTimes, Grid(-12, 12, 96), Grid(-3, 2, 96), 33344, 57920},
      {Kernel::kSoftmax, Grid(-40, 8, 96), {}, 31290, 54306},
      {Kernel::kRmsNorm, Grid(-5, 7, 96), {}, 15270, 24702},
  };
  for (const Case& c : cases) {
    const Vec h = c.h.empty() ? Vec(1, 0) : c.h;
    const auto all = RunKernel<P>(c.k, c.x, h, false);
    const auto split = RunKernel<P>(c.k, c.x, h, true);
    for (std::size_t p = 0; p < 3; ++p) {
      EXPECT_EQ(split[p].out, all[p].out) << "kernel " << static_cast<int>(c.k);
      EXPECT_EQ(split[p].rounds, split[p].theory_rounds) << "party " << p;
      EXPECT_EQ(split[p].bytes, split[p].theory_bytes) << "party " << p;
      EXPECT_GT(split[p].rounds, all[p].rounds);
      EXPECT_EQ(all[p].deferred_in_split, 0u);
      // SiLU's and the norm's lazy truncations ride split openings (in front, split alike).
      if (c.k != Kernel::kSoftmax) {
        EXPECT_GT(split[p].deferred_in_split, 0u);
      }
      // The arithmetic openings shrink by a third; comparisons' binary rounds do not.
      EXPECT_LT(split[p].bytes, all[p].bytes * 4 / 5) << "party " << p;
    }
    std::printf("  %s kernel %d: all-to-all %llu B / %llu rounds, split kings %llu B / %llu\n",
                std::string(P::kName).c_str(), static_cast<int>(c.k),
                static_cast<unsigned long long>(all[0].bytes),
                static_cast<unsigned long long>(all[0].rounds),
                static_cast<unsigned long long>(split[0].bytes),
                static_cast<unsigned long long>(split[0].rounds));
    EXPECT_EQ(split[0].bytes, mal ? c.mal_bytes : c.semi_bytes);
  }
}

}  // namespace
}  // namespace mpcache::mpc
