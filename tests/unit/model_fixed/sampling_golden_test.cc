// Private sampling against the real model (issue 18): at fixed positions of stories260K,
// many draws of the fixed-point procedure (the secure engine's, whose tokens
// SecureSampling.* shows equal to this twin's) follow the model's softmax at temperature T
// (chi-square, significance 0.001, cells expected below 5 pooled), and top-p never emits a
// token outside llama2.c's nucleus of the fixed-point probabilities while sampling within
// it in proportion.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "common/fixed_sampling.h"
#include "golden/golden_texts.h"
#include "model/checkpoint.h"
#include "model/fixed_engine.h"
#include "model/tokenizer.h"
#include "unit/model_fixed/sampling_stats.h"

namespace mpcache::model {
namespace {

using sampling_test::ChiSquare;
using sampling_test::ChiSquareCritical001;
using sampling_test::Nucleus;

// Ring logits of stories260K after each of `text`'s tokens (teacher-forced), at f = 18.
std::vector<std::vector<Ring64>> LogitsAlong(const std::string& text) {
  std::vector<std::vector<Ring64>> out;
  const std::string dir = golden::RequireModelDir();
  if (dir.empty()) return out;
  auto w = LoadCheckpoint(dir + "/stories260K.bin");
  EXPECT_TRUE(w.ok());
  auto tok = Tokenizer::LoadLlama2c(dir + "/tok512.bin", w->config.vocab_size);
  EXPECT_TRUE(tok.ok());
  auto tokens = tok->Encode(text, true, false);
  EXPECT_TRUE(tokens.ok());
  auto e = FixedEngine::Create(*w, {});
  EXPECT_TRUE(e.ok());
  for (std::size_t pos = 0; pos < tokens->size(); ++pos) {
    EXPECT_TRUE(e->Forward((*tokens)[pos], static_cast<int>(pos)).ok());
    out.emplace_back(e->RingLogits().begin(), e->RingLogits().end());
  }
  return out;
}

std::vector<double> SoftmaxOf(const std::vector<Ring64>& l, double t) {
  const FixedPoint fp{kDefaultFracBits};
  std::vector<double> p(l.size());
  double mx = -1e300, sum = 0;
  for (Ring64 v : l) mx = std::max(mx, fp.Decode(v));
  for (std::size_t i = 0; i < l.size(); ++i) sum += p[i] = std::exp((fp.Decode(l[i]) - mx) / t);
  for (double& v : p) v /= sum;
  return p;
}

std::vector<int> Draw(const std::vector<Ring64>& l, const SamplingParams& s, int draws,
                      std::uint64_t seed) {
  SamplingNoise noise(seed, s.temperature, kDefaultFracBits);
  std::vector<int> counts(l.size(), 0);
  for (int d = 0; d < draws; ++d) {
    counts[static_cast<std::size_t>(PlainSample(FixedMathParams{}, l, noise, s))] += 1;
  }
  return counts;
}

const char* kText = "Once upon a time, there was a little girl named Lily. She loved to play";

// The three positions of kText where the model is least certain (highest entropy at T = 1):
// where a wrong sampler shows most; fixed by the model and the text.
std::vector<std::size_t> UncertainPositions(const std::vector<std::vector<Ring64>>& logits) {
  std::vector<std::pair<double, std::size_t>> h;
  for (std::size_t pos = 0; pos < logits.size(); ++pos) {
    double e = 0;
    for (double p : SoftmaxOf(logits[pos], 1.0)) e -= p > 0 ? p * std::log(p) : 0;
    h.emplace_back(-e, pos);
  }
  std::sort(h.begin(), h.end());
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < 3 && i < h.size(); ++i) out.push_back(h[i].second);
  return out;
}

TEST(SamplingGolden, TemperatureDrawsFollowTheModelsSoftmax) {
  const auto logits = LogitsAlong(kText);
  ASSERT_GT(logits.size(), 3u);
  for (std::size_t pos : UncertainPositions(logits)) {
    for (double t : {1.0, 0.8}) {
      SamplingParams s;
      s.temperature = t;
      s.top_p = 1;
      const int draws = 20000;
      const auto counts = Draw(logits[pos], s, draws, 100 + pos);
      int df = 0;
      const double chi = ChiSquare(counts, SoftmaxOf(logits[pos], t), draws, &df);
      ASSERT_GE(df, 2) << "position " << pos << ": too peaked to test";
      EXPECT_LT(chi, ChiSquareCritical001(df)) << "position " << pos << ", T " << t;
      // The test can tell a wrong temperature apart.
      int df2 = 0;
      const double wrong = ChiSquare(counts, SoftmaxOf(logits[pos], t * 1.25), draws, &df2);
      EXPECT_GT(wrong, ChiSquareCritical001(df2)) << "position " << pos << ", T " << t;
    }
  }
}

TEST(SamplingGolden, TopPStaysInTheNucleusAndSamplesItInProportion) {
  const auto logits = LogitsAlong(kText);
  ASSERT_GT(logits.size(), 3u);
  for (std::size_t pos : UncertainPositions(logits)) {
    SamplingParams s;
    s.temperature = 1.0;
    s.top_p = 0.8;
    // The procedure's own probabilities (T = 1: no rescaling), exact in plaintext.
    PlainBackend pb;
    const auto q = Softmax(pb, FixedMathParams{}, logits[pos], 1, logits[pos].size());
    const std::set<int> nucleus = Nucleus(q, s.top_p, kDefaultFracBits);
    const int draws = 3000;
    const auto counts = Draw(logits[pos], s, draws, 200 + pos);
    std::vector<double> want = SoftmaxOf(logits[pos], s.temperature);
    double in = 0;
    for (std::size_t i = 0; i < counts.size(); ++i) {
      if (nucleus.count(static_cast<int>(i)) == 0) {
        EXPECT_EQ(counts[i], 0) << "position " << pos << ": token " << i << " is outside";
        want[i] = 0;
      }
      in += want[i];
    }
    for (double& w : want) w /= in;
    int df = 0;
    const double chi = ChiSquare(counts, want, draws, &df);
    EXPECT_GT(nucleus.size(), 1u) << "position " << pos << ": the nucleus should hold several";
    if (df > 0) {
      EXPECT_LT(chi, ChiSquareCritical001(df)) << "position " << pos;
    }
    std::printf("  position %zu: nucleus of %zu tokens (mass > 0.8), chi-square %.1f (df %d)\n",
                pos, nucleus.size(), chi, df);
  }
}

}  // namespace
}  // namespace mpcache::model
