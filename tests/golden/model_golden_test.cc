// Golden tests of the plaintext reference engine on real trained weights: byte-for-byte
// llama2.c output from the llama2.c and the GGUF checkpoint, tokenizer ids of Llama-2.
#include <gtest/gtest.h>

#include "golden/golden_texts.h"
#include "model/checkpoint.h"
#include "model/float_engine.h"
#include "model/generate.h"
#include "model/gguf.h"
#include "model/tokenizer.h"
#include "unit/model/test_util.h"

namespace mpcache::model {
namespace {

using golden::kBosOnly200;
using golden::kOnceUponATime64;
using golden::RequireModelDir;

// Greedy generation from a checkpoint with a tokenizer file ("" = embedded vocabulary).
std::string RunGreedy(const std::string& model, const std::string& tokenizer,
                      const std::string& prompt, int steps) {
  auto ckpt = OpenCheckpoint(model);
  if (!ckpt.ok()) return "load error: " + ckpt.error().ToString();
  auto tok = tokenizer.empty() ? Tokenizer::FromVocabulary(ckpt->vocabulary.value_or(Vocabulary{}))
                               : Tokenizer::LoadLlama2c(tokenizer, ckpt->weights.config.vocab_size);
  if (!tok.ok()) return "tokenizer error: " + tok.error().ToString();
  auto engine = FloatEngine::Create(ckpt->weights);
  if (!engine.ok()) return "engine error: " + engine.error().ToString();
  auto sampler = Sampler::Create(ckpt->weights.config.vocab_size, SamplerOptions{});
  if (!sampler.ok()) return "sampler error";
  GenerateOptions opts;
  opts.prompt = prompt;
  opts.steps = steps;
  auto r = Generate(*engine, *tok, *sampler, opts);
  if (!r.ok()) return "generate error: " + r.error().ToString();
  return r->text;
}

TEST(ModelGoldenTest, Llama2cOnceUponATime64Steps) {
  const std::string dir = RequireModelDir();
  if (dir.empty()) return;
  EXPECT_EQ(RunGreedy(dir + "/stories260K.bin", dir + "/tok512.bin", "Once upon a time", 64),
            kOnceUponATime64);
}

TEST(ModelGoldenTest, Llama2cBosOnly200Steps) {
  const std::string dir = RequireModelDir();
  if (dir.empty()) return;
  EXPECT_EQ(RunGreedy(dir + "/stories260K.bin", dir + "/tok512.bin", "", 200), kBosOnly200);
}

TEST(ModelGoldenTest, GgufEmbeddedVocabularyOnceUponATime64Steps) {
  const std::string dir = RequireModelDir();
  if (dir.empty()) return;
  EXPECT_EQ(RunGreedy(dir + "/stories260K.gguf", "", "Once upon a time", 64), kOnceUponATime64);
}

TEST(ModelGoldenTest, GgufEmbeddedVocabularyBosOnly200Steps) {
  const std::string dir = RequireModelDir();
  if (dir.empty()) return;
  EXPECT_EQ(RunGreedy(dir + "/stories260K.gguf", "", "", 200), kBosOnly200);
}

TEST(ModelGoldenTest, GgufTensorsAreBitIdenticalToLlama2c) {
  // If a converter had permuted Q/K rows for RoPE, wq/wk would differ here.
  const std::string dir = RequireModelDir();
  if (dir.empty()) return;
  auto bin = OpenCheckpoint(dir + "/stories260K.bin");
  auto gguf = OpenCheckpoint(dir + "/stories260K.gguf");
  ASSERT_TRUE(bin.ok()) << bin.error().ToString();
  ASSERT_TRUE(gguf.ok()) << gguf.error().ToString();
  const ModelWeights &a = bin->weights, &b = gguf->weights;
  EXPECT_EQ(a.config.Describe().substr(0, 60), b.config.Describe().substr(0, 60));
  EXPECT_EQ(a.config.seq_len, 512);
  EXPECT_EQ(b.config.seq_len, 2048);        // the GGUF's metadata claims 2048
  EXPECT_TRUE(b.config.shared_classifier);  // output.weight == token_embd.weight
  EXPECT_EQ(a.config.ParameterCount(), 260032u);
  EXPECT_EQ(a.config.ParameterCount(), b.config.ParameterCount());
  EXPECT_EQ(a.token_embedding, b.token_embedding);
  EXPECT_EQ(a.rms_final, b.rms_final);
  ASSERT_EQ(a.layers.size(), b.layers.size());
  for (std::size_t l = 0; l < a.layers.size(); ++l) {
    SCOPED_TRACE("layer " + std::to_string(l));
    EXPECT_EQ(a.layers[l].rms_att, b.layers[l].rms_att);
    EXPECT_EQ(a.layers[l].wq, b.layers[l].wq);
    EXPECT_EQ(a.layers[l].wk, b.layers[l].wk);
    EXPECT_EQ(a.layers[l].wv, b.layers[l].wv);
    EXPECT_EQ(a.layers[l].wo, b.layers[l].wo);
    EXPECT_EQ(a.layers[l].rms_ffn, b.layers[l].rms_ffn);
    EXPECT_EQ(a.layers[l].w1, b.layers[l].w1);
    EXPECT_EQ(a.layers[l].w2, b.layers[l].w2);
    EXPECT_EQ(a.layers[l].w3, b.layers[l].w3);
  }
}

TEST(ModelGoldenTest, RewrittenCheckpointsReproduceGoldenText) {
  // Real weights through each writer: legacy and ak42 v1 are exact, so is F32 GGUF.
  const std::string dir = RequireModelDir();
  if (dir.empty()) return;
  auto ckpt = OpenCheckpoint(dir + "/stories260K.bin");
  ASSERT_TRUE(ckpt.ok());
  auto tok = Tokenizer::LoadLlama2c(dir + "/tok512.bin", 512);
  ASSERT_TRUE(tok.ok());
  testing::TempDir tmp;
  ASSERT_TRUE(WriteLlama2c(ckpt->weights, tmp.File("legacy.bin")).ok());
  ASSERT_TRUE(WriteLlama2cVersioned(ckpt->weights, tmp.File("v1.bin"), 1).ok());
  ASSERT_TRUE(WriteGguf(ckpt->weights, &tok->vocabulary(), tmp.File("m.gguf")).ok());
  const std::string tokfile = dir + "/tok512.bin";
  EXPECT_EQ(RunGreedy(tmp.File("legacy.bin"), tokfile, "Once upon a time", 64), kOnceUponATime64);
  EXPECT_EQ(RunGreedy(tmp.File("v1.bin"), tokfile, "Once upon a time", 64), kOnceUponATime64);
  EXPECT_EQ(RunGreedy(tmp.File("m.gguf"), "", "Once upon a time", 64), kOnceUponATime64);
  // Q8_0 (ak42 v2) changes the weights slightly: its own golden text, which departs from
  // the F32 story only after "too high." (a wrong dequantization departs at once).
  ASSERT_TRUE(WriteLlama2cVersioned(ckpt->weights, tmp.File("v2.bin"), 2).ok());
  EXPECT_EQ(RunGreedy(tmp.File("v2.bin"), tokfile, "Once upon a time", 64),
            golden::kOnceUponATime64Q8);
}

TEST(ModelGoldenTest, GgufVocabularyEqualsTok512) {
  const std::string dir = RequireModelDir();
  if (dir.empty()) return;
  auto gguf = OpenCheckpoint(dir + "/stories260K.gguf");
  ASSERT_TRUE(gguf.ok());
  ASSERT_TRUE(gguf->vocabulary.has_value()) << gguf->vocabulary_problem;
  auto tok = Tokenizer::LoadLlama2c(dir + "/tok512.bin", 512);
  ASSERT_TRUE(tok.ok()) << tok.error().ToString();
  EXPECT_EQ(gguf->vocabulary->tokens, tok->vocabulary().tokens);
  EXPECT_EQ(gguf->vocabulary->scores, tok->vocabulary().scores);
}

TEST(ModelGoldenTest, Llama2TokenizerHelloWorld) {
  const std::string dir = RequireModelDir();
  if (dir.empty()) return;
  auto tok = Tokenizer::LoadLlama2c(dir + "/tokenizer.bin", 32000);
  ASSERT_TRUE(tok.ok()) << tok.error().ToString();
  auto ids = tok->Encode("Hello world", true, false);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<int>{1, 15043, 3186}));
  EXPECT_EQ(tok->DecodeAll({15043, 3186}, true), "Hello world");
  // Newline and an emoji go through byte fallback (<0x0A> is id 13; 😀 = F0 9F 98 80).
  auto nl = tok->Encode("a\n\xF0\x9F\x98\x80", false, false);
  ASSERT_TRUE(nl.ok());
  ASSERT_GE(nl->size(), 2u);
  EXPECT_NE(std::find(nl->begin(), nl->end(), 13), nl->end());
  EXPECT_EQ(tok->Decode(29871, 13), "\n");
  auto eos = tok->Encode("Hello world", true, true);
  ASSERT_TRUE(eos.ok());
  EXPECT_EQ(eos->back(), 2);
}

TEST(ModelGoldenTest, Tok512PromptRoundTrip) {
  const std::string dir = RequireModelDir();
  if (dir.empty()) return;
  auto tok = Tokenizer::LoadLlama2c(dir + "/tok512.bin", 512);
  ASSERT_TRUE(tok.ok());
  auto ids = tok->Encode("Once upon a time", true, false);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(ids->front(), 1);
  EXPECT_EQ(tok->DecodeAll({ids->begin() + 1, ids->end()}, true), "Once upon a time");
}

TEST(ModelGoldenTest, WrongTokenizerForModelIsAClearError) {
  const std::string dir = RequireModelDir();
  if (dir.empty()) return;
  auto tok = Tokenizer::LoadLlama2c(dir + "/tokenizer.bin", 512);
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.error().code(), ErrorCode::kCorruptData);
  EXPECT_NE(tok.error().message().find("different model"), std::string::npos);
}

}  // namespace
}  // namespace mpcache::model
