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
                const std::vector<int>& prompt, int steps, int kv_block_tokens = 4) {
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
  EXPECT_NE(plain.fixed_tokens, full.fixed_tokens) << "the selection never mattered here";
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

}  // namespace
}  // namespace mpcache::infer
