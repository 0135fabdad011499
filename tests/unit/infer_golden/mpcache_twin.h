// MPCache on the real stories260K under MPC against its plaintext twin (the fixed-point
// engine running the same policy), token for token: the shared check of the golden and the
// heavy MPCache tests.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <iostream>
#include <string>

#include "golden/golden_texts.h"
#include "infer/in_process.h"
#include "model/checkpoint.h"
#include "model/tokenizer.h"
#include "unit/infer/infer_test_util.h"

namespace mpcache::infer::golden_test {

// Runs `prompt` for `steps` positions under `policy` in MPC and in the twin; expects the same
// tokens and a generation of at least `min_tokens`. Returns party 0's report.
template <typename P>
SessionReport ExpectMpcacheTwin(const std::string& prompt, int steps,
                                const model::MpcachePolicy& policy, std::size_t min_tokens) {
  const std::string dir = golden::RequireModelDir();
  EXPECT_FALSE(dir.empty());
  auto w = model::LoadCheckpoint(dir + "/stories260K.bin");
  EXPECT_TRUE(w.ok()) << w.error().ToString();
  if (!w.ok()) return {};
  auto tok = model::Tokenizer::LoadLlama2c(dir + "/tok512.bin", w->config.vocab_size);
  EXPECT_TRUE(tok.ok());
  auto prompt_tokens = tok->Encode(prompt, true, false);
  EXPECT_TRUE(prompt_tokens.ok());
  if (!tok.ok() || !prompt_tokens.ok()) return {};
  model::FixedEngineOptions fo;
  fo.mpcache = policy;
  const testing::PlainRun plain = testing::RunPlain(*w, *prompt_tokens, steps, tok->bos_id(), fo);
  auto ring = EncodeModel(*w, kRecommendedFracBits);
  EXPECT_TRUE(ring.ok());
  if (!ring.ok()) return {};
  InProcessOptions o;
  o.session.max_seq_len = steps;
  o.session.mpcache = policy;
  const auto t0 = std::chrono::steady_clock::now();
  auto run = RunInProcess<P>(*ring, *prompt_tokens, tok->bos_id(), steps, o);
  EXPECT_TRUE(run.ok()) << run.error().ToString();
  if (!run.ok()) return {};
  std::cerr << "[mpcache golden] " << P::kName << ", " << steps << " steps, "
            << prompt_tokens->size() << " prompt tokens: "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()
            << " s\n";
  EXPECT_GE(run->tokens.size(), min_tokens) << "too short a generation to exercise MPCache";
  EXPECT_EQ(run->tokens, plain.fixed_tokens) << testing::FirstDifference(
      run->tokens, plain.fixed_tokens, plain.margins, static_cast<int>(prompt_tokens->size()));
  return run->report;
}

// The held-out story's first paragraph: a prompt long enough to evict from.
inline std::string LongStoryPrompt() {
  return "Once upon a time, there was a little girl named Lily. She loved to play outside in "
         "the park. One day, she saw a big, red ball. She wanted to play with it, but it was "
         "too high.";
}

}  // namespace mpcache::infer::golden_test
