// Issue 19's per-phase round budget (docs/secure-llama.md, "Fewer rounds"), asserted: one
// decoded position of a malicious generation costs, per phase, exactly the rounds the table
// derives from the kernels (rounds are deterministic: they depend on shapes, not on values).
// The step is isolated as the difference of two runs that differ by one decoded position.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "infer/in_process.h"
#include "unit/infer/infer_test_util.h"

namespace mpcache::infer {
namespace {

std::map<std::string, std::uint64_t> StepRounds(const InProcessResult& longer,
                                                const InProcessResult& shorter) {
  std::map<std::string, std::uint64_t> out;
  for (const auto& [phase, c] : longer.phases[0]) {
    const auto it = shorter.phases[0].find(phase);
    out[phase] = c.rounds - (it == shorter.phases[0].end() ? 0 : it->second.rounds);
  }
  return out;
}

TEST(RoundBudget, OneDecodedPositionCostsTheDocumentedRoundsPerPhase) {
  // 2 layers, 4 heads (2 KV heads), vocabulary 40: every phase of the 64-step golden run's
  // table, at a context of 3 to 7 positions (one ranking level per row).
  auto ring = testing::SyntheticRingModel("32x2x4x2x64x40x64", 3);
  ASSERT_TRUE(ring.ok()) << ring.error().ToString();
  const std::vector<int> prompt = {1, 5, 9};
  InProcessOptions o;
  auto a = RunInProcess<mpc::Spdz2k>(*ring, prompt, 1, 3, o);
  ASSERT_TRUE(a.ok()) << a.error().ToString();
  auto b = RunInProcess<mpc::Spdz2k>(*ring, prompt, 1, 4, o);
  ASSERT_TRUE(b.ok()) << b.error().ToString();
  const std::map<std::string, std::uint64_t> got = StepRounds(*b, *a);
  const std::uint64_t L = 2;
  // Per layer: softmax 23 (ranked row max 6 = LtzRounds(31) + LtzRounds(8) + 1, exp 10,
  // reciprocal 7), two RMSNorms of 10 (the Newton step on the row first, then x g times
  // the finished 1/sqrt: one round more than folding x g in, far fewer bytes), FFN 15, attention 2,
  // scores and mix 1 each, KV append none (its key and value rows ride the scores' opening); then
  // the final RMSNorm (10), the argmax over 40 logits (the logits' truncation, two ranking levels
  // in groups of up to 8 — 6 groups of 6-7, then one of 6 — and the token's opening to the client:
  // 1 + 6 + 6 + 1) and the MAC check (3).
  const std::map<std::string, std::uint64_t> want = {
      {"softmax", 23 * L}, {"norms", 10 * (2 * L + 1)},
      {"ffn", 15 * L},     {"attention", 2 * L},
      {"kv_append", 0},    {"scores", L},
      {"mix", L},          {"classifier_argmax", 14},
      {"mac_check", 3},
  };
  for (const auto& [phase, rounds] : want) {
    const auto it = got.find(phase);
    ASSERT_NE(it, got.end()) << phase;
    EXPECT_EQ(it->second, rounds) << phase;
  }
  std::uint64_t total = 0, want_total = 0;
  for (const auto& [phase, rounds] : got) total += rounds;
  for (const auto& [phase, rounds] : want) want_total += rounds;
  EXPECT_EQ(total, want_total) << "a phase outside the budget spent rounds";
}

}  // namespace
}  // namespace mpcache::infer
