// The secure engine on small synthetic models: greedy tokens equal the plaintext
// fixed-point (and float) engine's in both security modes and both weight modes, for models
// it was not written against (grouped-query and plain multi-head, separate classifier, odd
// widths and vocabularies); the debug reveal matches FixedEngine's trace and is refused
// outside debug sessions.
#include <gtest/gtest.h>

#include <cmath>

#include "infer/in_process.h"
#include "infer/ring_model.h"
#include "model/synth.h"
#include "unit/infer/infer_test_util.h"

namespace mpcache::infer {
namespace {

using testing::FirstDifference;
using testing::PlainRun;
using testing::RunPlain;

model::ModelWeights Synth(const std::string& dims, bool shared, std::uint64_t seed = 7) {
  auto config = model::ParseDims(dims);
  EXPECT_TRUE(config.ok()) << config.error().ToString();
  config->shared_classifier = shared;
  auto w = model::MakeSyntheticWeights(*config, seed);
  EXPECT_TRUE(w.ok()) << w.error().ToString();
  return std::move(w).value();
}

template <typename P>
void ExpectSameTokens(const model::ModelWeights& w, const std::vector<int>& prompt, int steps,
                      bool private_weights,
                      int kv_block_tokens = model::KvLayout::kDefaultBlockTokens) {
  auto ring = EncodeModel(w, kRecommendedFracBits);
  ASSERT_TRUE(ring.ok()) << ring.error().ToString();
  const PlainRun plain = RunPlain(w, prompt, steps);
  InProcessOptions o;
  o.private_weights = private_weights;
  o.session.kv_block_tokens = kv_block_tokens;
  auto run = RunInProcess<P>(*ring, prompt, 1, steps, o);
  ASSERT_TRUE(run.ok()) << run.error().ToString();
  EXPECT_EQ(run->tokens, plain.fixed_tokens) << FirstDifference(
      run->tokens, plain.fixed_tokens, plain.margins, static_cast<int>(prompt.size()));
  EXPECT_EQ(plain.fixed_tokens, plain.float_tokens) << "fixed point itself departs from float";
}

// Grouped-query, shared classifier.
TEST(SecureLlama, GqaSharedClassifierMaliciousPublic) {
  ExpectSameTokens<mpc::Spdz2k>(Synth("32x2x4x2x64x40x16", true), {1, 5, 9}, 8, false);
}
TEST(SecureLlama, GqaSharedClassifierSemiHonestPublic) {
  ExpectSameTokens<mpc::SemiHonest>(Synth("32x2x4x2x64x40x16", true), {1, 5, 9}, 8, false);
}
// Multi-head without grouping, separate classifier, another width and vocabulary.
TEST(SecureLlama, MultiHeadSeparateClassifierMaliciousPublic) {
  ExpectSameTokens<mpc::Spdz2k>(Synth("24x1x3x3x40x37x16", false, 11), {1, 2}, 7, false);
}
TEST(SecureLlama, MultiHeadSeparateClassifierMaliciousPrivate) {
  ExpectSameTokens<mpc::Spdz2k>(Synth("24x1x3x3x40x37x16", false, 11), {1, 2}, 7, true);
}
// KV blocks of 3 rows: the attention products run over several blocks, the last partly
// used, and match the plaintext engines (which any block size leaves unchanged).
TEST(SecureLlama, SmallKvBlocksMalicious) {
  ExpectSameTokens<mpc::Spdz2k>(Synth("32x2x4x2x64x40x16", true), {1, 5, 9}, 8, false, 3);
}
TEST(SecureLlama, SmallKvBlocksSemiHonest) {
  ExpectSameTokens<mpc::SemiHonest>(Synth("24x1x3x3x40x37x16", false, 11), {1, 2}, 7, false, 2);
}
TEST(SecureLlama, GqaSemiHonestPrivate) {
  ExpectSameTokens<mpc::SemiHonest>(Synth("32x2x4x2x64x40x16", true), {1, 5, 9}, 8, true);
}

TEST(SecureLlama, RevealRefusedOutsideDebug) {
  SessionOptions o;
  o.reveal_intermediates = true;
  const Status s = o.Validate();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("debug"), std::string::npos);
  auto ring = EncodeModel(Synth("16x1x2x2x32x20x8", true), kRecommendedFracBits);
  ASSERT_TRUE(ring.ok());
  InProcessOptions io;
  io.session = o;
  auto run = RunInProcess<mpc::Spdz2k>(*ring, {1}, 1, 2, io);
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.error().message().find("debug"), std::string::npos) << run.error().ToString();
  // Without reveal, the trace is refused too.
  io.session = SessionOptions{};
  InProcessHook<mpc::Spdz2k> hook = [](int, int, SecureLlama<mpc::Spdz2k>& e) -> Status {
    auto t = e.Trace();
    EXPECT_FALSE(t.ok());
    return Status::Ok();
  };
  EXPECT_TRUE(RunInProcess<mpc::Spdz2k>(*ring, {1}, 1, 2, io, hook).ok());
}

// Debug session: every revealed intermediate is within a few LSB-driven units of
// FixedEngine's value at the same position.
TEST(SecureLlama, DebugRevealMatchesFixedEngineTrace) {
  // ~2x the measured worst difference (3.0e-4); every (position, name) pair of the
  // fixed engine's trace is compared (6 positions, 2 of them without final norm and logits).
  const double kTraceBound = 6e-4;
  const int kTracePairs = 44;
  const model::ModelWeights w = Synth("32x2x4x2x64x40x16", true);
  auto ring = EncodeModel(w, kRecommendedFracBits);
  ASSERT_TRUE(ring.ok());
  model::FixedEngineOptions fo;
  fo.record = true;
  auto xe = model::FixedEngine::Create(w, fo);
  ASSERT_TRUE(xe.ok());
  const std::vector<int> prompt = {1, 3, 4};
  const PlainRun plain = RunPlain(w, prompt, 6);
  InProcessOptions io;
  io.session.debug = true;
  io.session.reveal_intermediates = true;
  int compared = 0;
  double worst_all = 0;
  std::mutex mu;
  InProcessHook<mpc::Spdz2k> hook = [&](int party, int pos, SecureLlama<mpc::Spdz2k>& e) -> Status {
    if (party != 0) return Status::Ok();
    std::lock_guard<std::mutex> lock(mu);
    auto fwd = xe->Forward(plain.fixed_tokens[static_cast<std::size_t>(pos)], pos);
    EXPECT_TRUE(fwd.ok());
    auto trace = e.Trace();
    EXPECT_TRUE(trace.ok());
    if (!trace.ok()) return Status::Ok();
    for (const auto& [name, want] : xe->Trace()) {
      const auto it = (*trace)->find(name);
      if (it == (*trace)->end()) {
        // The secure engine computes the final norm and the logits from the last prompt
        // position on only.
        EXPECT_TRUE((name == "logits" || name == "final_norm") &&
                    pos + 1 < static_cast<int>(prompt.size()))
            << name << " missing from the secure trace at position " << pos;
        continue;
      }
      EXPECT_EQ(it->second.size(), want.size()) << name;
      if (it->second.size() != want.size()) continue;
      double worst = 0;
      for (std::size_t i = 0; i < want.size(); ++i) {
        worst = std::max(worst, std::abs(it->second[i] - want[i]));
      }
      worst_all = std::max(worst_all, worst);
      EXPECT_LT(worst, kTraceBound) << name << " at position " << pos;
      ++compared;
    }
    return Status::Ok();
  };
  auto run = RunInProcess<mpc::Spdz2k>(*ring, prompt, 1, 6, io, hook);
  ASSERT_TRUE(run.ok()) << run.error().ToString();
  std::printf("secure trace vs FixedEngine: %d (position, name) pairs, worst %.3g\n", compared,
              worst_all);
  EXPECT_EQ(compared, kTracePairs);
  EXPECT_EQ(run->tokens, plain.fixed_tokens);
}

}  // namespace
}  // namespace mpcache::infer

namespace mpcache::infer {
namespace {

// Offline first: all preprocessing fetched before the online phase, same tokens.
TEST(SecureLlama, PreprocessFirstGivesSameTokens) {
  const model::ModelWeights w = Synth("32x2x4x2x64x40x16", true);
  auto ring = EncodeModel(w, kRecommendedFracBits);
  ASSERT_TRUE(ring.ok());
  const PlainRun plain = RunPlain(w, {1, 5, 9}, 8);
  InProcessOptions o;
  o.preprocess_first = true;
  auto run = RunInProcess<mpc::Spdz2k>(*ring, {1, 5, 9}, 1, 8, o);
  ASSERT_TRUE(run.ok()) << run.error().ToString();
  EXPECT_EQ(run->tokens, plain.fixed_tokens);
  EXPECT_GT(run->prefetch_seconds, 0);
}

}  // namespace
}  // namespace mpcache::infer
