// Private sampling's fixed-point procedure (common/fixed_sampling.h) in plaintext: the draw
// follows softmax(l / T) (chi-square over many client noise draws, with a stated
// threshold), top-p never leaves llama2.c's nucleus and samples within it in proportion,
// top-k never leaves the k most likely tokens, the op counts are the stated theory, and
// the parameters are refused outside their ranges.
#include "common/fixed_sampling.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "unit/model_fixed/sampling_stats.h"

namespace mpcache {
namespace {

using sampling_test::ChiSquare;
using sampling_test::Nucleus;

constexpr int kF = kDefaultFracBits;
const FixedPoint kFp{kF};

std::vector<Ring64> Encode(const std::vector<double>& v) {
  std::vector<Ring64> out;
  for (double d : v) out.push_back(kFp.Encode(d));
  return out;
}

// Sample `draws` tokens from `logits` with the client noise of `seed`.
std::vector<int> Counts(const std::vector<double>& logits, const SamplingParams& s, int draws,
                        std::uint64_t seed) {
  const std::vector<Ring64> l = Encode(logits);
  SamplingNoise noise(seed, s.temperature, kF);
  std::vector<int> counts(logits.size(), 0);
  const FixedMathParams p{};
  for (int d = 0; d < draws; ++d)
    counts[static_cast<std::size_t>(PlainSample(p, l, noise, s))] += 1;
  return counts;
}

std::vector<double> SoftmaxAt(const std::vector<double>& logits, double t) {
  std::vector<double> p(logits.size());
  const double mx = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (std::size_t i = 0; i < p.size(); ++i) sum += p[i] = std::exp((logits[i] - mx) / t);
  for (double& v : p) v /= sum;
  return p;
}

// Whether the counts fit `probs` at significance 0.001 (chi-square, cells pooled as needed).
bool Fits(const std::vector<int>& counts, const std::vector<double>& probs, int draws) {
  int df = 0;
  const double chi = ChiSquare(counts, probs, draws, &df);
  return chi < sampling_test::ChiSquareCritical001(df);
}

const std::vector<double> kLogits = {2.0, 1.4, 1.1, 0.5, 0.0, -0.4, -1.0, -2.5};

TEST(FixedSampling, TemperatureDrawsFollowTheSoftmax) {
  for (double t : {1.0, 0.7, 1.6}) {
    SamplingParams s;
    s.temperature = t;
    const int draws = 20000;
    const auto counts = Counts(kLogits, s, draws, 7);
    EXPECT_TRUE(Fits(counts, SoftmaxAt(kLogits, t), draws)) << "temperature " << t;
    // And the test can tell: the softmax at another temperature is rejected.
    EXPECT_FALSE(Fits(counts, SoftmaxAt(kLogits, t * 1.3), draws));
  }
}

TEST(FixedSampling, TemperatureOnlyAddsTheNoiseAndCostsNoOperation) {
  SamplingParams s;
  s.temperature = 0.8;
  SamplingNoise noise(3, s.temperature, kF);
  const auto l = Encode(kLogits);
  const auto n = noise.Next(l.size());
  PlainBackend be;
  const auto scores = SamplingScores(be, FixedMathParams{}, l, n, s);
  for (std::size_t i = 0; i < l.size(); ++i) EXPECT_EQ(scores[i], l[i] + n[i]);
  EXPECT_EQ(be.counts().mul_batches + be.counts().cmp_batches + be.counts().trunc_batches, 0u);
}

TEST(FixedSampling, NoiseIsTheTemperatureTimesGumbelAndReproducesFromTheSeed) {
  SamplingNoise a(11, 2.0, kF), b(11, 2.0, kF), c(12, 2.0, kF);
  const auto x = a.Next(4096), y = b.Next(4096), z = c.Next(4096);
  EXPECT_EQ(x, y);
  EXPECT_NE(x, z);
  // Gumbel(0, 1) has mean 0.5772 (Euler-Mascheroni) and variance pi^2 / 6.
  double sum = 0, sq = 0;
  for (Ring64 v : x) {
    const double g = kFp.Decode(v) / 2.0;
    sum += g;
    sq += g * g;
  }
  const double mean = sum / 4096, var = sq / 4096 - mean * mean;
  EXPECT_NEAR(mean, 0.5772, 0.06);
  EXPECT_NEAR(var, 3.14159265 * 3.14159265 / 6, 0.15);
}

TEST(FixedSampling, TopPNeverLeavesTheNucleusAndSamplesItInProportion) {
  for (double top_p : {0.5, 0.8, 0.95}) {
    SamplingParams s;
    s.temperature = 0.9;
    s.top_p = top_p;
    const auto l = Encode(kLogits);
    std::vector<Ring64> z(l.size());
    for (std::size_t i = 0; i < l.size(); ++i)
      z[i] = FixedPoint::Truncate(l[i] * kFp.Encode(1.0 / s.temperature), kF);
    PlainBackend pb;
    const auto q = Softmax(pb, FixedMathParams{}, z, 1, z.size());
    const std::set<int> nucleus = Nucleus(q, top_p, kF);
    ASSERT_LT(nucleus.size(), l.size()) << "top-p " << top_p << " must cut something here";
    const int draws = 6000;
    const auto counts = Counts(kLogits, s, draws, 21);
    std::vector<double> want = SoftmaxAt(kLogits, s.temperature);
    double in = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
      if (nucleus.count(static_cast<int>(i)) == 0) {
        EXPECT_EQ(counts[i], 0) << "top-p " << top_p << ": token " << i << " is outside";
        want[i] = 0;
      }
      in += want[i];
    }
    for (double& w : want) w /= in;
    const std::size_t df = nucleus.size() - 1;
    if (df > 0) {
      EXPECT_TRUE(Fits(counts, want, draws)) << "top-p " << top_p;
    }
  }
}

TEST(FixedSampling, TopKKeepsTheKMostLikely) {
  for (int k : {1, 3, 5}) {
    SamplingParams s;
    s.temperature = 1.2;
    s.top_k = k;
    const int draws = 3000;
    const auto counts = Counts(kLogits, s, draws, 33);
    for (std::size_t i = static_cast<std::size_t>(k); i < counts.size(); ++i) {
      EXPECT_EQ(counts[i], 0) << "top-k " << k << ": token " << i;  // kLogits is sorted
    }
    std::vector<double> want = SoftmaxAt(kLogits, s.temperature);
    want.resize(static_cast<std::size_t>(k));
    const double in = std::accumulate(want.begin(), want.end(), 0.0);
    for (double& w : want) w /= in;
    std::vector<int> kept(counts.begin(), counts.begin() + k);
    if (k > 1) {
      EXPECT_TRUE(Fits(kept, want, draws)) << "top-k " << k;
    }
  }
}

TEST(FixedSampling, TopPAndTopKTogetherKeepTheSmallerSet) {
  SamplingParams s;
  s.temperature = 1.0;
  s.top_p = 0.95;  // the nucleus has more than 2 tokens here
  s.top_k = 2;
  const auto counts = Counts(kLogits, s, 2000, 5);
  for (std::size_t i = 2; i < counts.size(); ++i) EXPECT_EQ(counts[i], 0) << i;
  EXPECT_GT(counts[0], 0);
  EXPECT_GT(counts[1], 0);
}

TEST(FixedSampling, OperationCountsAreTheTheory) {
  const std::size_t v = kLogits.size();
  const auto l = Encode(kLogits);
  SamplingNoise noise(1, 0.8, kF);
  const auto n = noise.Next(v);
  PlainBackend soft;
  std::vector<Ring64> z(l.size());
  (void)Softmax(soft, FixedMathParams{}, z, 1, v);
  const FixedOpCounts sm = soft.counts();
  const std::uint64_t it = kF + 1;
  struct Case {
    double top_p;
    int top_k;
    std::uint64_t mul_batches, cmp_batches;
  };
  for (const Case& c : {Case{0.9, 0, it, 2 * it + 1}, Case{1.0, 3, 0, 2 * it + 1},
                        Case{0.9, 3, 2 * it, 2 * it + 1}}) {
    SamplingParams s;
    s.temperature = 0.8;
    s.top_p = c.top_p;
    s.top_k = c.top_k;
    PlainBackend be;
    (void)SamplingScores(be, FixedMathParams{}, l, n, s);
    EXPECT_EQ(be.counts().mul_batches - sm.mul_batches, c.mul_batches) << s.Describe();
    EXPECT_EQ(be.counts().cmp_batches - sm.cmp_batches, c.cmp_batches) << s.Describe();
    EXPECT_EQ(be.counts().trunc_batches - sm.trunc_batches, 1u) << s.Describe();  // l / T
  }
}

TEST(FixedSampling, ParametersOutsideTheirRangesAreRefusedByName) {
  const auto refused = [](SamplingParams s, const std::string& what) {
    const Status st = s.Validate(512);
    ASSERT_FALSE(st.ok()) << what;
    EXPECT_NE(st.error().message().find(what), std::string::npos) << st.error().message();
  };
  SamplingParams s;
  EXPECT_TRUE(s.Validate(512).ok());
  s.temperature = -1;
  refused(s, "--temperature -1 is out of range: 0 (greedy) or 0.01 .. 100");
  s.temperature = 0.001;
  refused(s, "--temperature");
  s = {};
  s.top_p = 0;
  refused(s, "--top-p 0 is out of range: a nucleus mass in (0, 1]");
  s.top_p = 1.5;
  refused(s, "--top-p");
  s = {};
  s.top_k = 513;
  refused(s, "--top-k 513 is out of range: 0 (off) .. 512");
  s.top_k = -2;
  refused(s, "--top-k");
  s = {};
  s.temperature = std::nan("");
  refused(s, "--temperature");
}

}  // namespace
}  // namespace mpcache
