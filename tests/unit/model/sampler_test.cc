#include "model/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "model/generate.h"
#include "unit/model/test_util.h"

namespace mpcache::model {
namespace {

using testing::TinyVocabulary;

SamplerOptions Opts(float temperature, float top_p = 0.9f, std::uint64_t seed = 42) {
  SamplerOptions o;
  o.temperature = temperature;
  o.top_p = top_p;
  o.seed = seed;
  return o;
}

GenerateOptions Gen(std::string prompt, int steps, int max_seq_len = 0) {
  GenerateOptions o;
  o.prompt = std::move(prompt);
  o.steps = steps;
  o.max_seq_len = max_seq_len;
  return o;
}

TEST(SamplerTest, GreedyPicksFirstMaximum) {
  auto s = Sampler::Create(5, Opts(0.0f));
  ASSERT_TRUE(s.ok());
  const std::vector<float> logits = {0.1f, 3.0f, -1.0f, 3.0f, 2.0f};
  EXPECT_EQ(s->Sample(logits), 1);
  EXPECT_EQ(Sampler::Argmax(logits), 1);
}

TEST(SamplerTest, SeededSamplingIsReproducible) {
  const std::vector<float> logits = {1.0f, 1.2f, 0.8f, 1.1f, 0.9f, 1.0f};
  auto run = [&](std::uint64_t seed, float top_p) {
    auto s = Sampler::Create(6, Opts(1.0f, top_p, seed));
    EXPECT_TRUE(s.ok());
    std::vector<int> out;
    for (int i = 0; i < 50; ++i) out.push_back(s->Sample(logits));
    return out;
  };
  EXPECT_EQ(run(7, 0.9f), run(7, 0.9f));
  EXPECT_NE(run(7, 0.9f), run(8, 0.9f));
  EXPECT_EQ(run(7, 1.0f), run(7, 1.0f));
  // Every token is reachable with plain multinomial sampling.
  std::map<int, int> seen;
  for (int t : run(3, 1.0f)) ++seen[t];
  EXPECT_EQ(seen.size(), 6u);
}

TEST(SamplerTest, TopPKeepsOnlyTheNucleus) {
  // Probabilities ~ {0.6, 0.3, 0.05, 0.05}: top-p 0.5 keeps only token 0.
  const std::vector<float> logits = {std::log(0.6f), std::log(0.3f), std::log(0.05f),
                                     std::log(0.05f)};
  auto s = Sampler::Create(4, Opts(1.0f, 0.5f, 11));
  ASSERT_TRUE(s.ok());
  for (int i = 0; i < 100; ++i) EXPECT_EQ(s->Sample(logits), 0);
  auto s2 = Sampler::Create(4, Opts(1.0f, 0.8f, 11));
  ASSERT_TRUE(s2.ok());
  for (int i = 0; i < 100; ++i) EXPECT_LT(s2->Sample(logits), 2);
}

TEST(SamplerTest, XorshiftMatchesLlama2c) {
  // llama2.c: state ^= state >> 12; ^= << 25; ^= >> 27; (state * 0x2545F4914F6CDD1D) >> 32,
  // then (u32 >> 8) / 16777216.
  auto s = Sampler::Create(2, Opts(1.0f, 0.9f, 42));
  ASSERT_TRUE(s.ok());
  std::uint64_t st = 42;
  for (int i = 0; i < 10; ++i) {
    st ^= st >> 12;
    st ^= st << 25;
    st ^= st >> 27;
    const auto u = static_cast<std::uint32_t>((st * 0x2545F4914F6CDD1Dull) >> 32);
    EXPECT_EQ(s->NextFloat(), static_cast<float>(u >> 8) / 16777216.0f);
  }
}

TEST(SamplerTest, RejectsBadOptions) {
  EXPECT_FALSE(Sampler::Create(0, {}).ok());
  EXPECT_FALSE(Sampler::Create(4, Opts(-1.0f)).ok());
  EXPECT_FALSE(Sampler::Create(4, Opts(0.0f, 0.9f, 0)).ok());
}

// Generation loop semantics with a scripted "model": logits favour script[pos].
class ScriptedModel {
 public:
  ScriptedModel(int vocab, std::vector<int> script) : logits_(vocab), script_(std::move(script)) {}
  Result<std::span<const float>> operator()(int token, int pos) {
    inputs.push_back(token);
    std::fill(logits_.begin(), logits_.end(), 0.0f);
    logits_[static_cast<std::size_t>(script_[static_cast<std::size_t>(pos)])] = 10.0f;
    return std::span<const float>(logits_);
  }
  std::vector<int> inputs;

 private:
  std::vector<float> logits_;
  std::vector<int> script_;
};

TEST(GenerateTest, PromptTokensCountAsStepsAndBosStops) {
  auto tok = Tokenizer::FromVocabulary(TinyVocabulary({" ", "a", " b", " c"}));
  ASSERT_TRUE(tok.ok());
  const int a = 260, b = 261, c = 262;
  auto sampler = Sampler::Create(tok->vocab_size(), {});
  ASSERT_TRUE(sampler.ok());
  // Prompt "a" encodes to [BOS, " ", "a"]: positions 0 and 1 are forced.
  ScriptedModel model(tok->vocab_size(), {99, 99, b, c, 0x0A + 3, b, 1, b, b, b});
  ForwardFn fwd = [&model](int t, int p) { return model(t, p); };
  std::vector<std::string> pieces;
  auto r = Generate(fwd, *tok, *sampler, Gen("a", 10),
                    [&](std::string_view p) { pieces.emplace_back(p); });
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(r->prompt_tokens, 3);
  EXPECT_EQ(model.inputs, (std::vector<int>{1, 259, a, b, c, 0x0A + 3, b}));
  EXPECT_EQ(r->tokens, (std::vector<int>{1, 259, a, b, c, 0x0A + 3, b}));
  EXPECT_EQ(r->positions, 7);  // the 7th forward produced BOS: stop
  // " " after BOS prints as "" (leading space dropped) and is skipped.
  EXPECT_EQ(r->text, "a b c\n b");
  EXPECT_EQ(pieces, (std::vector<std::string>{"a", " b", " c", "\n", " b"}));

  // Steps limit: 4 positions -> 3 printed tokens after BOS.
  ScriptedModel model2(tok->vocab_size(), {99, 99, b, c, b, b});
  ForwardFn fwd2 = [&model2](int t, int p) { return model2(t, p); };
  auto r2 = Generate(fwd2, *tok, *sampler, Gen("a", 4));
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(r2->positions, 4);
  EXPECT_EQ(r2->text, "a b c");
  // Clamped to the context length.
  ScriptedModel model3(tok->vocab_size(), {b, c, b});
  ForwardFn fwd3 = [&model3](int t, int p) { return model3(t, p); };
  auto r3 = Generate(fwd3, *tok, *sampler, Gen("", 100, 3));
  ASSERT_TRUE(r3.ok());
  EXPECT_EQ(r3->positions, 3);
  EXPECT_EQ(r3->text, "b c b");
  EXPECT_FALSE(Generate(fwd3, *tok, *sampler, Gen("", -1)).ok());
}

TEST(GenerateTest, ForwardErrorsPropagate) {
  auto tok = Tokenizer::FromVocabulary(TinyVocabulary({" "}));
  ASSERT_TRUE(tok.ok());
  auto sampler = Sampler::Create(tok->vocab_size(), {});
  ASSERT_TRUE(sampler.ok());
  ForwardFn failing = [](int, int) -> Result<std::span<const float>> {
    return InvalidArgument("boom");
  };
  auto r = Generate(failing, *tok, *sampler, Gen("", 5));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("boom"), std::string::npos);
}

}  // namespace
}  // namespace mpcache::model
