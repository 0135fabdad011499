// The KV memory's public side (model/kv_layout.h): block bookkeeping, plans, the position
// counter and refusals; and the plaintext engines run through it with any block size to the
// same bits (the layout changes where rows live, never what is attended).
#include "model/kv_layout.h"

#include <gtest/gtest.h>

#include "model/fixed_engine.h"
#include "model/float_engine.h"
#include "test_util.h"

namespace mpcache::model {
namespace {

using testing::TinyModel;

TEST(KvLayout, RowsFillBlocksInOrderAndThePlanCoversThem) {
  auto layout = KvLayout::Create(2, 10, 4);
  ASSERT_TRUE(layout.ok()) << layout.error().ToString();
  EXPECT_EQ(layout->position(), 0);
  EXPECT_TRUE(layout->Plan(0).blocks.empty());
  for (int t = 0; t < 10; ++t) {
    auto s = layout->Append(0);
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(s->block, t / 4);
    EXPECT_EQ(s->row, t % 4);
    EXPECT_EQ(s->opens_block, t % 4 == 0);
    EXPECT_EQ(layout->position(), 0);  // layer 1 is behind
  }
  const KvPlan plan = layout->Plan(0);
  EXPECT_EQ(plan, (KvPlan{{{0, 4}, {1, 4}, {2, 2}}}));
  EXPECT_EQ(plan.length(), 10);
  EXPECT_EQ(layout->PlanAt(0, 5), (KvPlan{{{0, 4}, {1, 1}}}));
  EXPECT_EQ(layout->blocks(0), 3);
  for (int t = 0; t < 10; ++t) ASSERT_TRUE(layout->Append(1).ok());
  EXPECT_EQ(layout->position(), 10);
  // Full: the refusal names the limit and the fix.
  auto full = layout->Append(0);
  ASSERT_FALSE(full.ok());
  EXPECT_NE(full.error().message().find("full (10 positions)"), std::string::npos);
  EXPECT_NE(full.error().message().find("raise max_seq_len"), std::string::npos);
  EXPECT_FALSE(layout->Append(2).ok());
  EXPECT_FALSE(layout->EndPrefill(11).ok());
  EXPECT_FALSE(layout->prefill_done());
  EXPECT_TRUE(layout->EndPrefill(4).ok());
  EXPECT_TRUE(layout->prefill_done());
}

TEST(KvLayout, BadShapesAreRefused) {
  EXPECT_FALSE(KvLayout::Create(0, 8, 4).ok());
  EXPECT_FALSE(KvLayout::Create(1, 0, 4).ok());
  auto zero = KvLayout::Create(1, 8, 0);
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.error().message().find("kv_block_tokens"), std::string::npos);
  auto capped = KvLayout::Create(1, 8, 100);  // a block never exceeds the context
  ASSERT_TRUE(capped.ok());
  EXPECT_EQ(capped->block_tokens(), 8);
}

TEST(PlainKvCache, RowsComeBackFromTheirBlocks) {
  PlainKvCache<std::uint64_t> cache(KvLayout::Create(1, 6, 4).value(), 3);
  for (std::uint64_t t = 0; t < 6; ++t) {
    const std::vector<std::uint64_t> k{t, t + 10, t + 20}, v{t + 100, t + 110, t + 120};
    ASSERT_TRUE(cache.Append(0, k, v).ok());
  }
  EXPECT_FALSE(cache.Append(0, std::vector<std::uint64_t>(3), std::vector<std::uint64_t>(3)).ok());
  EXPECT_FALSE(cache.Append(0, std::vector<std::uint64_t>(2), std::vector<std::uint64_t>(3)).ok());
  std::uint64_t t = 0;
  for (const KvBlockUse& u : cache.layout().Plan(0).blocks) {
    for (int r = 0; r < u.rows; ++r, ++t) {
      EXPECT_EQ(cache.Key(0, u.block, r)[1], t + 10);
      EXPECT_EQ(cache.Value(0, u.block, r)[2], t + 120);
    }
  }
  EXPECT_EQ(t, 6u);
}

// Both plaintext engines attend through the layout: any block size gives the same bits.
TEST(KvLayout, EnginesAreIndependentOfTheBlockSize) {
  const ModelWeights w = TinyModel(9, true);  // 4 heads, 2 kv heads
  std::vector<std::vector<std::uint64_t>> fixed_logits;
  std::vector<std::vector<float>> float_logits;
  for (int block : {1, 3, 64}) {
    FixedEngineOptions fo;
    fo.kv_block_tokens = block;
    FloatEngineOptions lo;
    lo.kv_block_tokens = block;
    auto fixed = FixedEngine::Create(w, fo);
    auto flt = FloatEngine::Create(w, lo);
    ASSERT_TRUE(fixed.ok() && flt.ok());
    std::vector<std::uint64_t> fl;
    std::vector<float> ll;
    for (int pos = 0; pos < 7; ++pos) {
      const int token = (pos * 5 + 2) % w.config.vocab_size;
      ASSERT_TRUE(fixed->Forward(token, pos).ok());
      auto logits = flt->Forward(token, pos);
      ASSERT_TRUE(logits.ok());
      fl.insert(fl.end(), fixed->RingLogits().begin(), fixed->RingLogits().end());
      ll.insert(ll.end(), logits->begin(), logits->end());
    }
    EXPECT_EQ(fixed->kv_layout().block_tokens(), std::min(block, w.config.seq_len));
    fixed_logits.push_back(std::move(fl));
    float_logits.push_back(std::move(ll));
  }
  for (std::size_t i = 1; i < fixed_logits.size(); ++i) {
    EXPECT_EQ(fixed_logits[i], fixed_logits[0]);
    EXPECT_EQ(float_logits[i], float_logits[0]);
  }
}

}  // namespace
}  // namespace mpcache::model
