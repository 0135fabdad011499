// Shared by the secure golden tests: run stories260K through the secure engine and compare
// the greedy tokens with FixedEngine's and the text with llama2.c's golden output; any
// differing step is named with the float logit margin there.
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

template <typename P>
void ExpectGolden(const std::string& prompt, int steps, const char* golden_text,
                  bool private_weights) {
  const std::string dir = golden::RequireModelDir();
  ASSERT_FALSE(dir.empty());
  auto w = model::LoadCheckpoint(dir + "/stories260K.bin");
  ASSERT_TRUE(w.ok()) << w.error().ToString();
  auto tok = model::Tokenizer::LoadLlama2c(dir + "/tok512.bin", w->config.vocab_size);
  ASSERT_TRUE(tok.ok()) << tok.error().ToString();
  auto prompt_tokens = tok->Encode(prompt, true, false);
  ASSERT_TRUE(prompt_tokens.ok());
  const testing::PlainRun plain = testing::RunPlain(*w, *prompt_tokens, steps, tok->bos_id());
  auto ring = EncodeModel(*w, kRecommendedFracBits);
  ASSERT_TRUE(ring.ok());
  InProcessOptions o;
  o.private_weights = private_weights;
  o.session.max_seq_len = steps;
  const auto t0 = std::chrono::steady_clock::now();
  auto run = RunInProcess<P>(*ring, *prompt_tokens, tok->bos_id(), steps, o);
  ASSERT_TRUE(run.ok()) << run.error().ToString();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cerr << "[secure golden] " << P::kName << (private_weights ? " private" : " public")
            << " weights, " << steps << " steps: " << secs << " s, " << run->report.decode_positions
            << " decoded positions\n";
  const int prompt_len = static_cast<int>(prompt_tokens->size());
  EXPECT_EQ(run->tokens, plain.fixed_tokens)
      << testing::FirstDifference(run->tokens, plain.fixed_tokens, plain.margins, prompt_len);
  std::vector<int> text_tokens = run->tokens;
  if (!text_tokens.empty() && text_tokens.size() > 1 && text_tokens.back() == tok->bos_id()) {
    text_tokens.pop_back();
  }
  const std::string text =
      tok->DecodeAll(std::vector<int>(text_tokens.begin() + 1, text_tokens.end()), true);
  EXPECT_EQ(text, golden_text);
}

}  // namespace mpcache::infer::golden_test
