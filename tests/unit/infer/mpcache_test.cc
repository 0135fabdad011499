// MPCache on secret shares (infer/mpcache_kv.h) against its plaintext twin, the fixed-point
// engine running the same policy (model/mpcache_policy.h): same greedy tokens in both
// security modes, with min/max and mean representatives, with layer sharing, and over
// contexts long enough that the selection really skips clusters.
#include <gtest/gtest.h>

#include "infer/in_process.h"
#include "infer/ring_model.h"
#include "model/synth.h"
#include "unit/infer/infer_test_util.h"

namespace mpcache::infer {
namespace {

using testing::FirstDifference;
using testing::PlainRun;
using testing::RunPlain;

model::ModelWeights Synth(const std::string& dims, std::uint64_t seed = 7) {
  auto config = model::ParseDims(dims);
  EXPECT_TRUE(config.ok()) << config.error().ToString();
  config->shared_classifier = true;
  auto w = model::MakeSyntheticWeights(*config, seed);
  EXPECT_TRUE(w.ok()) << w.error().ToString();
  return std::move(w).value();
}

template <typename P>
void ExpectTwin(const model::ModelWeights& w, const model::MpcachePolicy& policy,
                const std::vector<int>& prompt, int steps, int kv_block_tokens = 4,
                bool departs = true) {
  auto ring = EncodeModel(w, kRecommendedFracBits);
  ASSERT_TRUE(ring.ok()) << ring.error().ToString();
  model::FixedEngineOptions fo;
  fo.mpcache = policy;
  fo.kv_block_tokens = kv_block_tokens;
  const PlainRun plain = RunPlain(w, prompt, steps, 1, fo);
  const PlainRun full = RunPlain(w, prompt, steps, 1);
  InProcessOptions o;
  o.session.kv_block_tokens = kv_block_tokens;
  o.session.mpcache = policy;
  auto run = RunInProcess<P>(*ring, prompt, 1, steps, o);
  ASSERT_TRUE(run.ok()) << run.error().ToString();
  EXPECT_EQ(run->tokens, plain.fixed_tokens) << FirstDifference(
      run->tokens, plain.fixed_tokens, plain.margins, static_cast<int>(prompt.size()));
  // The selection ran: its phase carried traffic.
  const auto& phases = run->phases[0];
  ASSERT_TRUE(phases.count("select")) << "no select phase";
  EXPECT_GT(phases.at("select").rounds, 0u);
  // ... and changed what the model computes: the twin departs from the full cache.
  if (departs) {
    EXPECT_NE(plain.fixed_tokens, full.fixed_tokens) << "the selection never mattered here";
  }
}

model::MpcachePolicy Policy(int cluster, double keep, model::Representative rep, bool share) {
  model::MpcachePolicy p;
  p.cluster_tokens = cluster;
  p.keep_ratio = keep;
  p.representative = rep;
  p.share_layers = share;
  return p;
}

TEST(Mpcache, MinMaxMatchesPlaintextMalicious) {
  ExpectTwin<mpc::Spdz2k>(Synth("32x2x4x2x64x40x32"),
                          Policy(2, 0.4, model::Representative::kMinMax, false), {1, 5, 9}, 20);
}
TEST(Mpcache, MinMaxMatchesPlaintextSemiHonest) {
  ExpectTwin<mpc::SemiHonest>(Synth("32x2x4x2x64x40x32"),
                              Policy(2, 0.25, model::Representative::kMinMax, false), {1, 5, 9},
                              20);
}
TEST(Mpcache, MeanSharedLayersMatchesPlaintext) {
  ExpectTwin<mpc::Spdz2k>(Synth("32x4x4x2x64x40x32", 5),
                          Policy(2, 0.3, model::Representative::kMean, true), {1, 3}, 18);
}

// Cross-layer score reuse (layer_share_decay): layers 1 and 2 of 4 (layer 3 shares layer 2's
// selection) rank their scores plus 0.9 x the previous selecting layer's. With and without
// the reuse the secure engine equals its twin, the reuse changes the generation, and it
// costs exactly one truncation of the m cluster scores per blending layer and selecting
// position (1 round, B m per peer).
TEST(Mpcache, SharedLayersWithScoreReuseMatchPlaintextAndCostOneTruncation) {
  const model::ModelWeights w = Synth("32x4x4x2x64x40x48", 2);
  auto ring = EncodeModel(w, kRecommendedFracBits);
  ASSERT_TRUE(ring.ok()) << ring.error().ToString();
  const model::MpcachePolicy without = Policy(2, 0.3, model::Representative::kMinMax, true);
  model::MpcachePolicy with = without;
  with.layer_share_decay = 0.9;
  const std::vector<int> prompt{1, 5, 9};
  const int steps = 40;
  struct Run {
    std::vector<int> tokens;
    net::PhaseCounters select;
  };
  const auto run = [&](const model::MpcachePolicy& p) -> Run {
    model::FixedEngineOptions fo;
    fo.mpcache = p;
    fo.kv_block_tokens = 4;
    const PlainRun plain = RunPlain(w, prompt, steps, 1, fo);
    InProcessOptions o;
    o.session.kv_block_tokens = 4;
    o.session.mpcache = p;
    auto r = RunInProcess<mpc::Spdz2k>(*ring, prompt, 1, steps, o);
    EXPECT_TRUE(r.ok()) << r.error().ToString();
    if (!r.ok()) return {};
    EXPECT_EQ(r->tokens, plain.fixed_tokens) << FirstDifference(
        r->tokens, plain.fixed_tokens, plain.margins, static_cast<int>(prompt.size()));
    return {r->tokens, r->phases[0].at("select")};
  };
  const Run a = run(with), b = run(without);
  ASSERT_EQ(a.tokens.size(), b.tokens.size()) << "both must run as many positions";
  EXPECT_NE(a.tokens, b.tokens) << "the score reuse never mattered here";
  std::uint64_t rounds = 0, bytes = 0;
  for (int length = 1; length < static_cast<int>(a.tokens.size()); ++length) {
    const model::SelectionShape shape = model::ShapeFor(with, length);
    if (!shape.selects()) continue;
    rounds += 2;  // layers 1 and 2
    bytes += 2 * 2 * mpc::OpenBytes<mpc::Spdz2k>() * static_cast<std::uint64_t>(shape.candidates);
  }
  ASSERT_GT(rounds, 0u);
  EXPECT_EQ(a.select.rounds - b.select.rounds, rounds);
  EXPECT_EQ(a.select.bytes_sent - b.select.bytes_sent, bytes);
}

// Level 2 (sub-clusters inside the selected clusters): the secure selection of both levels
// equals the twin's, and the second level changes what is attended (the twin departs from
// the same policy with one level).
template <typename P>
void ExpectLevelTwoTwin(const std::string& dims, std::uint64_t seed, model::MpcachePolicy policy,
                        int steps) {
  ASSERT_TRUE(policy.two_levels());
  const model::ModelWeights w = Synth(dims, seed);
  ExpectTwin<P>(w, policy, {1, 5, 9}, steps);
  model::FixedEngineOptions fo;
  fo.kv_block_tokens = 4;
  fo.mpcache = policy;
  const PlainRun two = RunPlain(w, {1, 5, 9}, steps, 1, fo);
  fo.mpcache->level2_tokens = 0;
  const PlainRun one = RunPlain(w, {1, 5, 9}, steps, 1, fo);
  EXPECT_NE(two.fixed_tokens, one.fixed_tokens) << "level 2 never mattered here";
}
TEST(Mpcache, LevelTwoMinMaxMatchesPlaintextMalicious) {
  model::MpcachePolicy p = Policy(4, 0.5, model::Representative::kMinMax, false);
  p.level2_tokens = 2;
  p.level2_keep_ratio = 0.25;
  ExpectLevelTwoTwin<mpc::Spdz2k>("32x2x4x2x64x40x48", 3, p, 40);
}
TEST(Mpcache, LevelTwoMeanSharedLayersMatchesPlaintextSemiHonest) {
  model::MpcachePolicy p = Policy(4, 0.5, model::Representative::kMean, true);
  p.level2_tokens = 1;
  p.level2_keep_ratio = 0.2;
  ExpectLevelTwoTwin<mpc::SemiHonest>("32x4x4x2x64x40x48", 2, p, 40);
}

// The residual path (the skipped clusters as mean-key virtual tokens): generations equal
// the twin, with one level and with level 2 and shared layers.
// Here the selection alone departs from the full cache's generation
// (MinMaxMatchesPlaintextMalicious) and the residual path brings it back.
TEST(Mpcache, ResidualPathMatchesPlaintextMalicious) {
  const model::ModelWeights w = Synth("32x2x4x2x64x40x32");
  model::MpcachePolicy p = Policy(2, 0.4, model::Representative::kMinMax, false);
  p.residual = true;
  ExpectTwin<mpc::Spdz2k>(w, p, {1, 5, 9}, 20, 4, /*departs=*/false);
  model::FixedEngineOptions fo;
  fo.kv_block_tokens = 4;
  fo.mpcache = p;
  const PlainRun with = RunPlain(w, {1, 5, 9}, 20, 1, fo);
  fo.mpcache->residual = false;
  const PlainRun without = RunPlain(w, {1, 5, 9}, 20, 1, fo);
  const PlainRun full = RunPlain(w, {1, 5, 9}, 20, 1);
  EXPECT_NE(without.fixed_tokens, full.fixed_tokens);
  EXPECT_EQ(with.fixed_tokens, full.fixed_tokens);
}
TEST(Mpcache, ResidualPathLevelTwoSharedLayersMatchesPlaintextSemiHonest) {
  model::MpcachePolicy p = Policy(4, 0.5, model::Representative::kMean, true);
  p.level2_tokens = 1;
  p.level2_keep_ratio = 0.2;
  p.residual = true;
  ExpectTwin<mpc::SemiHonest>(Synth("32x4x4x2x64x40x48", 2), p, {1, 5, 9}, 40);
}

// Malicious mode checks every opening of a decoding step, of all layers and both domains
// (attention, selection, softmax, argmax), in ONE batched check before the token leaves:
// between two decoding positions each domain begins exactly one check, whatever the number
// of layers, and the mac_check phase costs its 3 rounds per step.
void ExpectOneMacCheckPerStep(const std::string& dims) {
  const model::ModelWeights w = Synth(dims, 3);
  auto ring = EncodeModel(w, kRecommendedFracBits);
  ASSERT_TRUE(ring.ok()) << ring.error().ToString();
  InProcessOptions o;
  o.session.kv_block_tokens = 4;
  o.session.mpcache = Policy(2, 0.4, model::Representative::kMinMax, false);
  o.session.mpcache->static_keep_ratio = 0.6;
  const std::vector<int> prompt{1, 5, 9, 3, 7, 11, 2, 6, 10, 4};
  std::vector<std::pair<std::uint64_t, std::uint64_t>> at;  // party 0, per decoding position
  InProcessHook<mpc::Spdz2k> hook = [&](int party, int pos, SecureLlama<mpc::Spdz2k>& e) {
    if (party == 0 && pos + 1 >= static_cast<int>(prompt.size())) {
      at.emplace_back(e.context().arith().checks_begun(), e.context().checks_begun());
    }
    return Status::Ok();
  };
  const int steps = 18;
  auto run = RunInProcess<mpc::Spdz2k>(*ring, prompt, 1, steps, o, hook);
  ASSERT_TRUE(run.ok()) << run.error().ToString();
  ASSERT_GE(at.size(), 4u);
  for (std::size_t i = 1; i < at.size(); ++i) {
    EXPECT_EQ(at[i].first - at[i - 1].first, 1u) << "arithmetic checks before position " << i;
    EXPECT_EQ(at[i].second - at[i - 1].second, 1u) << "binary checks before position " << i;
  }
  const auto& mac = run->report.decode_phases.at("mac_check");
  EXPECT_EQ(mac.rounds, 3u * static_cast<std::uint64_t>(run->report.released));
}

TEST(Mpcache, OneBatchedMacCheckPerDecodingStepOneLayer) {
  ExpectOneMacCheckPerStep("32x1x4x2x64x40x32");
}
TEST(Mpcache, OneBatchedMacCheckPerDecodingStepFourLayers) {
  ExpectOneMacCheckPerStep("32x4x4x2x64x40x32");
}

}  // namespace
}  // namespace mpcache::infer
