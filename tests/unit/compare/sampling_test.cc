// Private sampling's scores (common/fixed_sampling.h) on secret shares, both modes: the
// same operations as the plaintext twin, the same nucleus and exactly the same scores
// (the nucleus decision is the only place the softmax's truncation noise could reach, and
// these logits keep every probability away from the threshold), and measured rounds and
// bytes equal to the backend's theory; the secret one-hot of the argmax is the twin's token.
#include <gtest/gtest.h>

#include <cstdio>

#include "cmp_harness.h"
#include "common/fixed_sampling.h"
#include "mpc/compare/secure_backend.h"
#include "mpc/compare/select.h"

namespace mpcache::mpc {
namespace {

using testing::CmpHarness;
using testing::ExpectAllOk;
using testing::RevealChecked;
using testing::ShareVec;
using testing::Vec;

template <typename P>
class SamplingTest : public ::testing::Test {};
using Modes = ::testing::Types<SemiHonest, Spdz2k>;
TYPED_TEST_SUITE(SamplingTest, Modes);

struct Out {
  Vec scores, one_hot;
  FixedOpCounts counts;
  std::uint64_t rounds = 0, bytes = 0, theory_rounds = 0, theory_bytes = 0;
};

// Party 0's cost as literals (measured once; the theory check below is computed by the
// same backend whose sends it checks, so only these catch a kernel that does more or less).
struct Cost {
  std::uint64_t rounds, semi_bytes, malicious_bytes;
};

template <typename P>
void CheckSampling(const SamplingParams& s, std::uint64_t noise_seed, const Cost& cost) {
  const FixedPoint fp{kDefaultFracBits};
  // 24 logits, well separated (no probability within a few LSB of any threshold).
  std::vector<double> logits;
  for (int i = 0; i < 24; ++i) logits.push_back(3.0 - 0.37 * i + ((i * 7) % 5) * 0.05);
  Vec l;
  for (double d : logits) l.push_back(fp.Encode(d));
  SamplingNoise noise(noise_seed, s.temperature, fp.frac_bits);
  const Vec n = noise.Next(l.size());
  const FixedMathParams params{};
  PlainBackend pb;
  const Vec plain = SamplingScores(pb, params, l, n, s);
  const int want = RingArgmax(plain);

  CmpHarness<P> h(29);
  auto res = h.Run([&](BinaryContext<P>& ctx) -> Result<Out> {
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> ls, ShareVec(ctx.arith(), l));
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> ns, ShareVec(ctx.arith(), n));
    const auto before = ctx.arith().stats().Total();
    SecureBackend<P> be(ctx);
    Shares<P> scores = be.Materialize(SamplingScores(be, params, ls, ns, s));
    if (!be.status().ok()) return be.status().error();
    const auto after = ctx.arith().stats().Total();
    Out o;
    o.counts = be.counts();
    o.rounds = after.rounds - before.rounds;
    o.bytes = after.bytes_sent - before.bytes_sent;
    o.theory_rounds = be.theory().rounds;
    o.theory_bytes = be.theory().bytes_sent;
    MPCACHE_ASSIGN_OR_RETURN(ArgMaxResult<P> am,
                             RowArgMax<P>(ctx, scores, 1, scores.size(), params.compare_bits));
    MPCACHE_ASSIGN_OR_RETURN(o.scores, RevealChecked(ctx, scores));
    MPCACHE_ASSIGN_OR_RETURN(o.one_hot, RevealChecked(ctx, am.one_hot));
    return o;
  });
  ASSERT_NO_FATAL_FAILURE(ExpectAllOk(res));
  for (const auto& r : res) {
    EXPECT_EQ(r->rounds, r->theory_rounds) << s.Describe();
    EXPECT_EQ(r->bytes, r->theory_bytes) << s.Describe();
  }
  const Out& o = res[0].value();
  std::printf("  %s %s: %llu rounds, %llu bytes sent by party 0\n", std::string(P::kName).c_str(),
              s.Describe().c_str(), static_cast<unsigned long long>(o.rounds),
              static_cast<unsigned long long>(o.bytes));
  EXPECT_EQ(o.rounds, cost.rounds) << s.Describe();
  EXPECT_EQ(o.bytes, std::string(P::kName) == "malicious" ? cost.malicious_bytes : cost.semi_bytes)
      << s.Describe();
  EXPECT_EQ(o.counts.mul_batches, pb.counts().mul_batches);
  EXPECT_EQ(o.counts.mul_elems, pb.counts().mul_elems);
  EXPECT_EQ(o.counts.cmp_batches, pb.counts().cmp_batches);
  EXPECT_EQ(o.counts.cmp_elems, pb.counts().cmp_elems);
  EXPECT_EQ(o.counts.trunc_batches, pb.counts().trunc_batches);
  EXPECT_EQ(o.scores, plain) << s.Describe();
  Vec hot(l.size(), 0);
  hot[static_cast<std::size_t>(want)] = 1;
  EXPECT_EQ(o.one_hot, hot) << s.Describe();
  if (s.Truncates()) {
    int excluded = 0;
    for (Ring64 v : plain) excluded += fp.Decode(v) < -kSamplingExclusion / 2 ? 1 : 0;
    EXPECT_GT(excluded, 0) << s.Describe() << ": the nucleus should cut some of 24 tokens";
  }
}

TYPED_TEST(SamplingTest, TemperatureOnlyIsLocal) {
  SamplingParams s;
  s.temperature = 0.8;
  CheckSampling<TypeParam>(s, 3, {0, 0, 0});  // local: scaled logits plus noise
}

TYPED_TEST(SamplingTest, TopPMatchesThePlaintextTwin) {
  SamplingParams s;
  s.temperature = 0.9;
  s.top_p = 0.7;
  CheckSampling<TypeParam>(s, 4, {158, 32218, 59326});
}

TYPED_TEST(SamplingTest, TopKAndTopPMatchThePlaintextTwin) {
  SamplingParams s;
  s.temperature = 1.0;
  s.top_p = 0.9;
  s.top_k = 4;
  CheckSampling<TypeParam>(s, 5, {177, 32594, 60098});
}

}  // namespace
}  // namespace mpcache::mpc
