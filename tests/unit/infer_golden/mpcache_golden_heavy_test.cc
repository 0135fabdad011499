// MPCache on the real stories260K under MPC (label heavy): a long generation (512 positions,
// the whole context) with clusters of 32 tokens and a quarter of them attended equals its
// plaintext twin — the fixed-point engine running the same policy — token for token, in
// both security modes.
#include <gtest/gtest.h>

#include <chrono>
#include <iostream>

#include "golden/golden_texts.h"
#include "infer/in_process.h"
#include "model/checkpoint.h"
#include "model/tokenizer.h"
#include "unit/infer/infer_test_util.h"

namespace mpcache::infer::golden_test {
namespace {

template <typename P>
void ExpectTwin(const std::string& prompt, int steps, model::Representative rep) {
  const std::string dir = golden::RequireModelDir();
  ASSERT_FALSE(dir.empty());
  auto w = model::LoadCheckpoint(dir + "/stories260K.bin");
  ASSERT_TRUE(w.ok()) << w.error().ToString();
  auto tok = model::Tokenizer::LoadLlama2c(dir + "/tok512.bin", w->config.vocab_size);
  ASSERT_TRUE(tok.ok());
  auto prompt_tokens = tok->Encode(prompt, true, false);
  ASSERT_TRUE(prompt_tokens.ok());
  model::MpcachePolicy policy;
  policy.cluster_tokens = 32;
  policy.keep_ratio = 0.25;
  policy.representative = rep;
  model::FixedEngineOptions fo;
  fo.mpcache = policy;
  const testing::PlainRun plain = testing::RunPlain(*w, *prompt_tokens, steps, tok->bos_id(), fo);
  auto ring = EncodeModel(*w, kRecommendedFracBits);
  ASSERT_TRUE(ring.ok());
  InProcessOptions o;
  o.session.max_seq_len = steps;
  o.session.mpcache = policy;
  const auto t0 = std::chrono::steady_clock::now();
  auto run = RunInProcess<P>(*ring, *prompt_tokens, tok->bos_id(), steps, o);
  ASSERT_TRUE(run.ok()) << run.error().ToString();
  std::cerr << "[mpcache golden] " << P::kName << ", " << steps << " steps: "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()
            << " s\n";
  EXPECT_GT(run->tokens.size(), 200u) << "too short a generation to exercise the selection";
  EXPECT_EQ(run->tokens, plain.fixed_tokens) << testing::FirstDifference(
      run->tokens, plain.fixed_tokens, plain.margins, static_cast<int>(prompt_tokens->size()));
}

TEST(SecureMpcacheHeavy, Stories512SemiHonestMinMax) {
  ExpectTwin<mpc::SemiHonest>("Once upon a time", 512, model::Representative::kMinMax);
}
TEST(SecureMpcacheHeavy, Stories512MaliciousMean) {
  ExpectTwin<mpc::Spdz2k>("Lily and Ben went to the park", 512, model::Representative::kMean);
}

}  // namespace
}  // namespace mpcache::infer::golden_test
