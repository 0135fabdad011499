// stories260K's real weights as an F16 GGUF (its FFN width 172 is no multiple of Q8_0's
// 32-weight blocks), through the compact path: the secure engine computes from the mapped
// F16 integers, and its tokens equal the compact fixed-point twin's exactly; the text is the
// float32 model's golden story (F16 rounding of the weights does not change a token here).
// Label golden: 24 steps semi-honest (a beginning of the story); the 64-step malicious run
// is in the heavy binary (MPCACHE_COMPACT_GOLDEN_FULL).
#include <filesystem>

#include "infer/ring_model.h"
#include "model/gguf.h"
#include "unit/infer_golden/golden_run.h"

namespace mpcache::infer::golden_test {
namespace {

template <typename P>
void ExpectCompactGolden(int steps) {
  const std::string dir = golden::RequireModelDir();
  ASSERT_FALSE(dir.empty());
  auto w = model::LoadCheckpoint(dir + "/stories260K.bin");
  ASSERT_TRUE(w.ok()) << w.error().ToString();
  auto tok = model::Tokenizer::LoadLlama2c(dir + "/tok512.bin", w->config.vocab_size);
  ASSERT_TRUE(tok.ok());
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("mpcache_stories_f16_" + std::to_string(::getpid()) + ".gguf"))
                               .string();
  ASSERT_TRUE(model::WriteGguf(*w, &tok->vocabulary(), path, model::GgmlType::kF16).ok());
  auto cm = model::CompactModel::Open(path);
  std::filesystem::remove(path);  // the mapping keeps it until the model is gone
  ASSERT_TRUE(cm.ok()) << cm.error().ToString();
  EXPECT_EQ((*cm)->weight_type, "F16");
  auto prompt = tok->Encode("Once upon a time", true, false);
  ASSERT_TRUE(prompt.ok());
  // The compact twin's greedy tokens.
  model::FixedEngineOptions fo;
  fo.max_seq_len = steps;
  auto xe = model::FixedEngine::Create(*cm, fo);
  ASSERT_TRUE(xe.ok()) << xe.error().ToString();
  std::vector<int> twin = *prompt;
  ASSERT_TRUE(xe->BeginPrompt(static_cast<int>(prompt->size())).ok());
  for (int pos = 0; pos < steps; ++pos) {
    ASSERT_TRUE(xe->Forward(twin[static_cast<std::size_t>(pos)], pos).ok());
    if (pos + 1 == static_cast<int>(prompt->size())) {
      ASSERT_TRUE(xe->EndPrefill(0).ok());
    }
    if (pos + 1 < static_cast<int>(prompt->size())) continue;
    twin.push_back(xe->Argmax());
    if (twin.back() == tok->bos_id()) break;
  }
  auto ring = EncodeCompactModel(*cm, kRecommendedFracBits);
  ASSERT_TRUE(ring.ok());
  InProcessOptions o;
  o.session.max_seq_len = steps;
  auto run = RunInProcess<P>(*ring, *prompt, tok->bos_id(), steps, o);
  ASSERT_TRUE(run.ok()) << run.error().ToString();
  EXPECT_EQ(run->tokens, twin);
  std::vector<int> text_tokens(run->tokens.begin() + 1, run->tokens.end());
  if (!text_tokens.empty() && text_tokens.back() == tok->bos_id()) text_tokens.pop_back();
  const std::string text = tok->DecodeAll(text_tokens, true);
  if (steps == 64) {
    EXPECT_EQ(text, golden::kOnceUponATime64);
  } else {
    EXPECT_TRUE(golden::ContinuesTheGoldenStory(text));
  }
}

#ifdef MPCACHE_COMPACT_GOLDEN_FULL
TEST(CompactGolden, StoriesF16OnceUponATime64Malicious) {
  ExpectCompactGolden<mpc::Spdz2k>(64);
}
#else
TEST(CompactGolden, StoriesF16OnceUponATime24SemiHonest) {
  ExpectCompactGolden<mpc::SemiHonest>(24);
}
#endif

}  // namespace
}  // namespace mpcache::infer::golden_test
