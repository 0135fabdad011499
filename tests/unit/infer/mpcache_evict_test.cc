// MPCache's static look-once eviction (model/mpcache_policy.h EvictionFor, infer/mpcache_kv.h)
// on secret shares against its plaintext twin, exactly (ring arithmetic throughout), in both
// security modes; its rounds and bytes held to the header's theory:
//   rank:    RowRankSelection over n_layers rows of m importances: LtzRounds(bits) +
//            LtzRounds(RankBits(m)) rounds;
//   compact: per layer one product E_l x [K | V]: 1 round, B x (keep m + m 2 kv) per peer;
//   reload:  per layer the kept rows under fresh masks: 1 round, B x kept 2 kv per peer.
// Then, in whole generations, the secure engine with eviction equals the fixed-point engine
// with eviction token for token, and the eviction changes what the model attends.
#include <gtest/gtest.h>

#include "common/prg.h"
#include "infer/in_process.h"
#include "infer/mpcache_kv.h"
#include "infer/ring_model.h"
#include "model/synth.h"
#include "mpc/compare/compare.h"
#include "mpc/compare/rank_select.h"
#include "preproc/local_parties.h"
#include "unit/compare/cmp_harness.h"
#include "unit/infer/infer_test_util.h"

namespace mpcache::infer {
namespace {

using mpc::Shares;
using mpc::testing::RevealChecked;
using mpc::testing::ShareVec;
using Vec = std::vector<std::uint64_t>;

TEST(EvictionShape, SinkWindowAndBudgetArePublicFunctionsOfThePromptLength) {
  model::MpcachePolicy p;
  p.cluster_tokens = 4;
  p.static_keep_ratio = 0.5;
  p.observation_window = 0.2;
  const model::EvictionShape e = model::EvictionFor(p, 40);
  EXPECT_EQ(e.sink, 4);
  EXPECT_EQ(e.window, 8);
  EXPECT_EQ(e.candidates, 28);
  EXPECT_EQ(e.keep, 8);  // budget 20 = 4 + 8 + 8
  EXPECT_TRUE(e.evicts());
  EXPECT_EQ(e.kept(), 20);
  EXPECT_EQ(e.observe_from(), 32);
  // Rows kept: the sink, the selected candidates in the order given, the window.
  const std::vector<int> rows = model::KeptRows(e, std::vector<int>{5, 0, 27, 3, 9, 1, 2, 4});
  ASSERT_EQ(rows.size(), 20u);
  EXPECT_EQ((std::vector<int>(rows.begin(), rows.begin() + 6)),
            (std::vector<int>{0, 1, 2, 3, 9, 4}));
  EXPECT_EQ(rows[6], 31);
  EXPECT_EQ(rows.back(), 39);
  // A budget below sink + window evicts every candidate; a short prompt evicts nothing.
  p.static_keep_ratio = 0.1;
  EXPECT_EQ(model::EvictionFor(p, 40).keep, 0);
  EXPECT_EQ(model::EvictionFor(p, 40).kept(), 12);
  EXPECT_FALSE(model::EvictionFor(p, 5).evicts());
  EXPECT_EQ(model::EvictionFor(p, 5).kept(), 5);
  // 1 = no eviction, and the knobs are validated naming their fields.
  p.static_keep_ratio = 1.0;
  EXPECT_FALSE(model::EvictionFor(p, 400).evicts());
  p.static_keep_ratio = 0;
  EXPECT_NE(p.Validate().error().message().find("static_keep_ratio"), std::string::npos);
  p.static_keep_ratio = 0.5;
  p.observation_window = 1.5;
  EXPECT_NE(p.Validate().error().message().find("observation_window"), std::string::npos);
}

// Keys, values, queries: testing::SmallSigned; weights in [0, 2^16] (f = 16).
Vec Small(std::size_t n, Prg& prg) {
  return testing::SmallSigned(n, prg);
}
Vec Weights(std::size_t n, Prg& prg) {
  Vec v(n);
  for (auto& e : v) e = prg.NextU64() % ((1u << 16) + 1);
  return v;
}

// sigmoid: eviction_score sigmoid, the importance summed from the sigmoids ObserveScores
// passes (drawn apart from the weights Mix gets, so a memory summing the weights fails).
// impact: impact_weight (the kept rows' scores then carry their importance x
// ImpactMultiplier, and the gather one more column).
template <typename P>
void ExpectEvictionTwin(double static_keep, bool sigmoid = false, double impact = 0) {
  model::ModelConfig config;
  config.dim = 12;
  config.n_heads = 4;
  config.n_kv_heads = 2;
  config.n_layers = 2;
  config.seq_len = 64;
  const std::size_t nh = 4, hs = 3, kv = 6, n = 20, layers = 2;
  model::MpcachePolicy policy;
  policy.cluster_tokens = 3;
  policy.keep_ratio = 1.0;  // no dynamic selection: the eviction alone
  policy.static_keep_ratio = static_keep;
  policy.observation_window = 0.25;
  if (sigmoid) policy.eviction_score = model::EvictionScore::kSigmoid;
  policy.impact_weight = impact;
  const model::EvictionShape e = model::EvictionFor(policy, static_cast<int>(n));
  ASSERT_TRUE(e.evicts());
  const auto m = static_cast<std::size_t>(e.candidates), keep = static_cast<std::size_t>(e.keep),
             kept = static_cast<std::size_t>(e.kept()), W = static_cast<std::size_t>(e.window);
  Prg prg(TestSeed(71));
  std::vector<Vec> keys, values, weights, sigmoids;  // [layer]; weights: W queries x nh x n
  for (std::size_t l = 0; l < layers; ++l) {
    keys.push_back(Small(n * kv, prg));
    values.push_back(Small(n * kv, prg));
    weights.push_back(Weights(W * nh * n, prg));
    sigmoids.push_back(Weights(W * nh * n, prg));
  }
  const std::vector<Vec>& observed = sigmoid ? sigmoids : weights;
  const Vec q = Small(nh * hs, prg), probs = Weights(nh * kept, prg);

  // The twin: importance = the window's weights summed over queries and heads; the kept
  // rows; then scores and mix over them.
  std::vector<Vec> want_scores(layers), want_mix(layers);
  for (std::size_t l = 0; l < layers; ++l) {
    Vec imp(n, 0);
    for (std::size_t i = 0; i < W * nh; ++i) {
      for (std::size_t t = 0; t < n; ++t) imp[t] += observed[l][i * n + t];
    }
    const std::vector<int> picked =
        model::TopKIndices(std::span<const std::uint64_t>(imp.data() + e.sink, m), keep);
    const std::vector<int> rows = model::KeptRows(e, picked);
    ASSERT_EQ(rows.size(), kept);
    want_scores[l].assign(nh * kept, 0);
    want_mix[l].assign(nh * hs, 0);
    const std::uint64_t mult =
        model::ImpactMultiplier(policy, e, static_cast<int>(nh), static_cast<int>(hs), 16);
    if (impact > 0) {
      EXPECT_GT(mult, 0u);
    }
    for (std::size_t h = 0; h < nh; ++h) {
      for (std::size_t t = 0; t < kept; ++t) {
        const auto r = static_cast<std::size_t>(rows[t]);
        if (impact > 0) want_scores[l][h * kept + t] += imp[r] * mult;
        for (std::size_t i = 0; i < hs; ++i) {
          want_scores[l][h * kept + t] += q[h * hs + i] * keys[l][r * kv + (h / 2) * hs + i];
          want_mix[l][h * hs + i] += probs[h * kept + t] * values[l][r * kv + (h / 2) * hs + i];
        }
      }
    }
  }

  struct Out {
    std::vector<Vec> scores, mix;
    net::PhaseCounters cost;
    int length = 0, position = 0;
  };
  auto lp = preproc::LocalParties<P>::Create(preproc::LocalPartiesFromSeed(73));
  ASSERT_TRUE(lp.ok());
  auto res = (*lp)->Run([&](mpc::BinaryContext<P>& b) -> Result<Out> {
    mpc::Context<P>& ctx = b.arith();
    MPCACHE_ASSIGN_OR_RETURN(auto mem, MpcacheKv<P>::Create(b, config, 64, 4, policy, 40, 16));
    MPCACHE_RETURN_IF_ERROR(mem->BeginPrompt(static_cast<int>(n)));
    for (int l = 0; l < 2; ++l) {
      const auto lu = static_cast<std::size_t>(l);
      MPCACHE_ASSIGN_OR_RETURN(Shares<P> sk, ShareVec(ctx, keys[lu]));
      MPCACHE_ASSIGN_OR_RETURN(Shares<P> sv, ShareVec(ctx, values[lu]));
      MPCACHE_RETURN_IF_ERROR(mem->LoadPrefill(ctx, l, sk, sv));
      // The window's queries' weights reach the memory through Mix, as in a forward.
      for (std::size_t i = 0; i < W; ++i) {
        const Vec w(weights[lu].begin() + static_cast<std::ptrdiff_t>(i * nh * n),
                    weights[lu].begin() + static_cast<std::ptrdiff_t>((i + 1) * nh * n));
        MPCACHE_ASSIGN_OR_RETURN(Shares<P> sw, ShareVec(ctx, w));
        if (mem->ObservesScores(l) != sigmoid) return Internal("ObservesScores wrong");
        if (sigmoid) {
          const Vec g(sigmoids[lu].begin() + static_cast<std::ptrdiff_t>(i * nh * n),
                      sigmoids[lu].begin() + static_cast<std::ptrdiff_t>((i + 1) * nh * n));
          MPCACHE_ASSIGN_OR_RETURN(Shares<P> sg, ShareVec(ctx, g));
          MPCACHE_RETURN_IF_ERROR(mem->ObserveScores(l, std::move(sg)));
        }
        MPCACHE_ASSIGN_OR_RETURN(Shares<P> ignored, mem->Mix(ctx, l, mem->Plan(l), sw));
        (void)ignored;
      }
    }
    Out out;
    const auto t0 = ctx.stats().Total();
    MPCACHE_RETURN_IF_ERROR(mem->EndPrefill(ctx, 0));
    const auto t1 = ctx.stats().Total();
    out.cost.rounds = t1.rounds - t0.rounds;
    out.cost.bytes_sent = t1.bytes_sent - t0.bytes_sent;
    out.length = mem->layout().length(0);
    out.position = mem->position();
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> sq, ShareVec(ctx, q));
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> sp, ShareVec(ctx, probs));
    for (int l = 0; l < 2; ++l) {
      MPCACHE_ASSIGN_OR_RETURN(Shares<P> s, mem->Scores(ctx, l, mem->Plan(l), sq));
      MPCACHE_ASSIGN_OR_RETURN(Shares<P> o, mem->Mix(ctx, l, mem->Plan(l), sp));
      MPCACHE_ASSIGN_OR_RETURN(Vec so, RevealChecked(b, s));
      MPCACHE_ASSIGN_OR_RETURN(Vec oo, RevealChecked(b, o));
      out.scores.push_back(std::move(so));
      out.mix.push_back(std::move(oo));
    }
    return out;
  });
  for (const auto& r : res) ASSERT_TRUE(r.ok()) << r.error().ToString();
  // The evicted rows are gone; the positions stay counted.
  EXPECT_EQ(res[0]->length, static_cast<int>(kept));
  EXPECT_EQ(res[0]->position, static_cast<int>(n));
  EXPECT_EQ(res[0]->scores, want_scores);
  EXPECT_EQ(res[0]->mix, want_mix);
  constexpr std::uint64_t B = mpc::OpenBytes<P>();
  const int bits = model::ImportanceBits(16, e, static_cast<int>(nh));
  const int rb = mpc::RankBits(m);
  const std::uint64_t rank_bytes =
      keep == 0 ? 0
                : mpc::RankTopKBytesPerPeer(layers, m, keep, bits, mpc::OpenBytes<P>(bits),
                                            mpc::OpenBytes<P>(rb), B) -
                      2 * B * layers * keep * m;  // selection only, no values product
  const std::uint64_t rounds =
      (keep == 0 ? 0 : static_cast<std::uint64_t>(mpc::LtzRounds(bits) + mpc::LtzRounds(rb))) +
      (keep == 0 ? 1 : 2) * layers;
  const std::uint64_t width = 2 * kv + (impact > 0 ? 1 : 0);
  const std::uint64_t per_layer = (keep == 0 ? 0 : B * (keep * m + m * width)) + B * kept * 2 * kv;
  for (const auto& r : res) {
    EXPECT_EQ(r->cost.rounds, rounds);
    EXPECT_EQ(r->cost.bytes_sent, 2 * (rank_bytes + layers * per_layer));
  }
}

template <typename P>
class MpcacheEvictTest : public ::testing::Test {};
using Modes = ::testing::Types<mpc::SemiHonest, mpc::Spdz2k>;
TYPED_TEST_SUITE(MpcacheEvictTest, Modes);

TYPED_TEST(MpcacheEvictTest, KeptRowsEqualThePlaintextTwinAndCostTheTheory) {
  ExpectEvictionTwin<TypeParam>(0.6);
}
TYPED_TEST(MpcacheEvictTest, ABudgetBelowSinkAndWindowDropsEveryCandidateWithoutRanking) {
  ExpectEvictionTwin<TypeParam>(0.2);
}
TYPED_TEST(MpcacheEvictTest, SigmoidScoresRankTheCandidatesAtTheSameCost) {
  ExpectEvictionTwin<TypeParam>(0.6, /*sigmoid=*/true);
}
TYPED_TEST(MpcacheEvictTest, ImpactReweightingCarriesTheImportanceInTheGather) {
  ExpectEvictionTwin<TypeParam>(0.6, /*sigmoid=*/false, /*impact=*/2.0);
  ExpectEvictionTwin<TypeParam>(0.2, /*sigmoid=*/false, /*impact=*/2.0);  // no candidate kept
}

// Whole generations: the secure engine with the eviction equals its fixed-point twin, the
// eviction shrank the cache, and it changed what the model computes.
template <typename P>
void ExpectGenerationTwin(const model::MpcachePolicy& policy, const std::vector<int>& prompt,
                          int steps) {
  auto config = model::ParseDims("32x2x4x2x64x40x48");
  ASSERT_TRUE(config.ok()) << config.error().ToString();
  config->shared_classifier = true;
  auto w = model::MakeSyntheticWeights(*config, 11);
  ASSERT_TRUE(w.ok()) << w.error().ToString();
  auto ring = EncodeModel(*w, kRecommendedFracBits);
  ASSERT_TRUE(ring.ok()) << ring.error().ToString();
  model::FixedEngineOptions fo;
  fo.mpcache = policy;
  fo.kv_block_tokens = 4;
  const testing::PlainRun plain = testing::RunPlain(*w, prompt, steps, 1, fo);
  model::MpcachePolicy kept_all = policy;
  kept_all.static_keep_ratio = 1.0;
  model::FixedEngineOptions fo_all = fo;
  fo_all.mpcache = kept_all;
  const testing::PlainRun no_eviction = testing::RunPlain(*w, prompt, steps, 1, fo_all);
  InProcessOptions o;
  o.session.kv_block_tokens = 4;
  o.session.mpcache = policy;
  auto run = RunInProcess<P>(*ring, prompt, 1, steps, o);
  ASSERT_TRUE(run.ok()) << run.error().ToString();
  EXPECT_EQ(run->tokens, plain.fixed_tokens) << testing::FirstDifference(
      run->tokens, plain.fixed_tokens, plain.margins, static_cast<int>(prompt.size()));
  const auto& phases = run->phases[0];
  ASSERT_TRUE(phases.count("evict")) << "no evict phase";
  EXPECT_GT(phases.at("evict").rounds, 0u);
  EXPECT_NE(plain.fixed_tokens, no_eviction.fixed_tokens) << "the eviction never mattered here";
}

std::vector<int> LongPrompt() {
  std::vector<int> p{1};
  for (int i = 0; i < 19; ++i) p.push_back(2 + (i * 7) % 37);
  return p;
}

TEST(MpcacheEviction, GenerationMatchesPlaintextMalicious) {
  model::MpcachePolicy p;
  p.cluster_tokens = 2;
  p.keep_ratio = 1.0;
  p.static_keep_ratio = 0.4;
  ExpectGenerationTwin<mpc::Spdz2k>(p, LongPrompt(), 30);
}
// Impact re-weighting after the eviction, with the dynamic selection: the secure generation
// equals the twin, which departs from the same policy without it.
TEST(MpcacheEviction, ImpactReweightingMatchesPlaintextMalicious) {
  model::MpcachePolicy p;
  p.cluster_tokens = 2;
  p.keep_ratio = 0.5;
  p.static_keep_ratio = 0.4;
  p.impact_weight = 2.0;
  ExpectGenerationTwin<mpc::Spdz2k>(p, LongPrompt(), 30);
  auto config = model::ParseDims("32x2x4x2x64x40x48");
  ASSERT_TRUE(config.ok());
  config->shared_classifier = true;
  auto w = model::MakeSyntheticWeights(*config, 11);
  ASSERT_TRUE(w.ok());
  model::FixedEngineOptions fo;
  fo.mpcache = p;
  fo.kv_block_tokens = 4;
  const testing::PlainRun with = testing::RunPlain(*w, LongPrompt(), 30, 1, fo);
  fo.mpcache->impact_weight = 0;
  const testing::PlainRun without = testing::RunPlain(*w, LongPrompt(), 30, 1, fo);
  EXPECT_NE(with.fixed_tokens, without.fixed_tokens) << "the re-weighting never mattered here";
}

// The sigmoid variant, its window's queries selecting (their sigmoids scattered with the
// weights): the secure engine's Sigmoid equals the twin's within its truncations.
TEST(MpcacheEviction, SigmoidWithDynamicSelectionMatchesPlaintextMalicious) {
  model::MpcachePolicy p;
  p.cluster_tokens = 2;
  p.keep_ratio = 0.5;
  p.static_keep_ratio = 0.5;
  p.eviction_score = model::EvictionScore::kSigmoid;
  ExpectGenerationTwin<mpc::Spdz2k>(p, LongPrompt(), 30);
}
TEST(MpcacheEviction, WithDynamicSelectionMatchesPlaintextSemiHonest) {
  model::MpcachePolicy p;
  p.cluster_tokens = 2;
  p.keep_ratio = 0.5;
  p.static_keep_ratio = 0.5;
  ExpectGenerationTwin<mpc::SemiHonest>(p, LongPrompt(), 30);
}

}  // namespace
}  // namespace mpcache::infer
