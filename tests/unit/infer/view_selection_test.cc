// MPCache's selection and sampling stay secret (part 4 of view_test.cc's list): the
// view of a generation whose layers rank, gather and scatter through a secret one-hot (and
// evict once) does not depend on the prompt, the selection's DP requests and the sampling
// view follow public shapes only, and every attention triple was announced by the plan.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

#include "unit/infer/view_test_util.h"

namespace mpcache::infer::viewtest {
namespace {

// Plan-driven preprocessing (issue 11): every attention triple a party takes was announced,
// in order, before its step ran (so a remote dealer is asked for all of them at once), and
// the plan is a function of public shapes only: the same at every party and for another
// prompt of the same length — which is also the data-independence of these requests.
TEST(SecureView, AttentionTriplesFollowTheAnnouncedPlan) {
  RunConfig c;
  auto a = RunRecorded<mpc::SemiHonest>(SmallModel(), kPromptA, 3, c);
  auto b = RunRecorded<mpc::SemiHonest>(SmallModel(), kPromptB, 3, c);
  ASSERT_TRUE(a.ok()) << a.error().ToString();
  ASSERT_TRUE(b.ok()) << b.error().ToString();
  const auto& plan = a->announced[0];
  ASSERT_EQ(plan.size(), 2u * 3u);  // 1 layer: scores and mix per position
  for (std::size_t i = 0; i < plan.size(); ++i) {
    EXPECT_EQ(plan[i].side, i % 2 == 0 ? mpc::MaskSide::kRight : mpc::MaskSide::kLeft);
    EXPECT_EQ(plan[i].length(), i / 2 + 1) << "entry " << i;
  }
  for (std::size_t p = 0; p < 3; ++p) {
    EXPECT_TRUE(a->taken[p] == a->announced[p]) << "party " << p << " took unannounced triples";
    EXPECT_TRUE(a->announced[p] == plan) << "party " << p << " announced another plan";
    EXPECT_TRUE(b->announced[p] == plan) << "the plan depends on the prompt (party " << p << ")";
  }
}

// ---- 4. MPCache's selection stays secret (reveal: none) ------------------------------------

// Clusters of one token, a third of them attended: from the fourth position on every layer
// ranks its candidates, gathers and scatters through the secret one-hot; and the look-once
// eviction after the 5-token prompt keeps 3 of its rows (the sink, one of the 3 candidates,
// the window's last row).
model::MpcachePolicy ViewPolicy() {
  model::MpcachePolicy p;
  p.cluster_tokens = 1;
  p.keep_ratio = 0.3;
  p.static_keep_ratio = 0.6;
  // The sigmoid eviction scores: the window's Sigmoid openings (and its sigmoids in the
  // scatter) are in the view too; the softmax variant opens nothing of its own.
  p.eviction_score = model::EvictionScore::kSigmoid;
  p.impact_weight = 2;  // the importances gathered with the kept rows: one more column
  return p;
}
constexpr int kMpcacheSteps = 6;
const std::vector<int> kSelectA{1, 5, 9, 2, 7};
const std::vector<int> kSelectB{1, 3, 30, 12, 6};
// Level 2 (no eviction): clusters of 2, one kept, then one of its two tokens, from the
// seventh position on.
model::MpcachePolicy LevelTwoViewPolicy() {
  model::MpcachePolicy p;
  p.cluster_tokens = 2;
  p.keep_ratio = 0.5;
  p.level2_tokens = 1;
  p.level2_keep_ratio = 0.3;
  return p;
}
constexpr int kLevelTwoSteps = 8;

// What the plaintext twin attends at every position and layer for `prompt` (then greedy).
std::vector<std::vector<std::vector<int>>> PlainSelections(const std::vector<int>& prompt,
                                                           const model::MpcachePolicy& policy,
                                                           int steps) {
  auto config = model::ParseDims("32x1x4x2x64x40x16");
  auto w = model::MakeSyntheticWeights(*config, 9);
  model::FixedEngineOptions fo;
  fo.mpcache = policy;
  auto e = model::FixedEngine::Create(*w, fo);
  EXPECT_TRUE(e.ok());
  std::vector<std::vector<std::vector<int>>> out;
  int token = prompt[0];
  EXPECT_TRUE(e->BeginPrompt(static_cast<int>(prompt.size())).ok());
  for (int pos = 0; pos < steps; ++pos) {
    EXPECT_TRUE(e->Forward(token, pos).ok());
    out.push_back(e->Attended());
    if (pos + 1 == static_cast<int>(prompt.size())) {
      EXPECT_TRUE(e->EndPrefill(0).ok());
      out.push_back(e->Kept());  // what the eviction kept: differs between the prompts
    }
    token = pos + 1 < static_cast<int>(prompt.size()) ? prompt[static_cast<std::size_t>(pos + 1)]
                                                      : e->Argmax();
  }
  return out;
}

template <typename P>
void ExpectSelectionStaysSecret(const model::MpcachePolicy& policy, int steps) {
  RunConfig base;
  base.session.mpcache = policy;
  // 1. Every opening, the selection's included, is masked by a fresh dealer mask.
  std::vector<RunRecord> exact;
  for (int k = 0; k < kExactRuns; ++k) {
    RunConfig c = base;
    c.dealer_seed = c.local_seed = 11;
    c.burn = k;
    c.burn_items = kFreeMasks;
    auto r = RunRecorded<P>(SmallModel(), kSelectA, steps, c);
    ASSERT_TRUE(r.ok()) << r.error().ToString();
    exact.push_back(std::move(*r));
  }
  const Report rep = CheckExact(exact);
  Print("exact (MPCache)", rep);
  EXPECT_TRUE(rep.findings.empty()) << rep.Text();
  // 2. Two prompts whose selections differ: the same requests to the dealer (item, size,
  //    order), the same messages (peer, size, order) and rounds at every party.
  const auto sel_a = PlainSelections(kSelectA, policy, steps),
             sel_b = PlainSelections(kSelectB, policy, steps);
  ASSERT_NE(sel_a, sel_b) << "the two prompts select the same clusters: nothing to compare";
  if (policy.evicts()) {
    const std::size_t evicted_at = kSelectA.size();  // the entry after the prompt's last
    ASSERT_EQ(sel_a[evicted_at].size(), 1u) << "one layer kept rows";
    ASSERT_NE(sel_a[evicted_at], sel_b[evicted_at]) << "the eviction keeps the same rows for both";
  }
  if (policy.two_levels()) {
    // The last position's sub-cluster selections differ (level 2 picks other tokens).
    ASSERT_NE(sel_a.back(), sel_b.back()) << "level 2 attends the same tokens for both";
  }
  for (std::size_t pos = 0; pos < sel_a.size(); ++pos) {
    for (std::size_t l = 0; l < sel_a[pos].size(); ++l) {
      ASSERT_EQ(sel_a[pos][l].size(), sel_b[pos][l].size()) << "attended counts must be public";
    }
  }
  RunConfig c = base;
  c.record_messages = true;
  auto a = RunRecorded<P>(SmallModel(), kSelectA, steps, c);
  auto b = RunRecorded<P>(SmallModel(), kSelectB, steps, c);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->tokens.size(), b->tokens.size()) << "both runs must decode as many positions";
  ASSERT_EQ(a->openings.size(), b->openings.size());
  std::size_t selecting = 0;
  for (std::size_t i = 0; i < a->openings.size(); ++i) {
    EXPECT_EQ(a->openings[i].requests, b->openings[i].requests) << a->openings[i].Name();
    EXPECT_EQ(a->openings[i].n, b->openings[i].n) << a->openings[i].Name();
    for (const Request& q : a->openings[i].requests) selecting += q.item == Item::kMatrixTriple;
  }
  EXPECT_GT(selecting, 0u) << "no gather or scatter product recorded";
  for (std::size_t p = 0; p < 3; ++p) {
    EXPECT_EQ(a->sent[p], b->sent[p]) << "party " << p << " sent other messages";
    EXPECT_EQ(a->rounds[p], b->rounds[p]);
    EXPECT_TRUE(a->announced[p] == b->announced[p]) << "party " << p;
  }
}

// reveal: dp opens noisy cluster scores to the parties, never to the dealer: two prompts that
// select differently still give identical dealer requests (item, size, order, noise inputs
// included), message sizes and rounds at every party.
template <typename P>
void ExpectDpRequestsFollowPublicShapes() {
  RunConfig c;
  c.session.mpcache = ViewPolicy();
  c.session.mpcache->reveal = config::Reveal::kDp;
  c.record_messages = true;
  auto a = RunRecorded<P>(SmallModel(), kSelectA, kMpcacheSteps, c);
  auto b = RunRecorded<P>(SmallModel(), kSelectB, kMpcacheSteps, c);
  ASSERT_TRUE(a.ok()) << a.error().ToString();
  ASSERT_TRUE(b.ok()) << b.error().ToString();
  ASSERT_EQ(a->openings.size(), b->openings.size());
  std::size_t noise_inputs = 0;
  for (std::size_t i = 0; i < a->openings.size(); ++i) {
    EXPECT_EQ(a->openings[i].requests, b->openings[i].requests) << a->openings[i].Name();
    EXPECT_EQ(a->openings[i].n, b->openings[i].n) << a->openings[i].Name();
    for (const Request& q : a->openings[i].requests) noise_inputs += q.item == Item::kInputMask;
  }
  EXPECT_GT(noise_inputs, 0u) << "no party entered noise";
  for (std::size_t p = 0; p < 3; ++p) {
    EXPECT_EQ(a->sent[p], b->sent[p]) << "party " << p << " sent other messages";
    EXPECT_EQ(a->rounds[p], b->rounds[p]);
    EXPECT_TRUE(a->announced[p] == b->announced[p]) << "party " << p;
  }
}

// Private sampling: two client seeds that sample different stories give every party the
// same view shapes — the same dealer requests (the noise's masks included), message sizes and
// rounds: the nucleus, the draws and the tokens decide nothing a party sees (only T, top-p
// and top-k are public).
template <typename P>
void ExpectSamplingViewFollowsPublicShapes() {
  RunConfig c;
  c.session.sampling.temperature = 40;  // the small model is peaked: a flat draw
  c.session.sampling.top_p = 0.9;
  c.session.sampling.top_k = 12;
  c.record_messages = true;
  c.sampling_seed = 1;
  constexpr int kSamplingSteps = 12;
  // Two seeds whose stories run to the end (a BOS ends a story early, as the client decides
  // in the open) and differ.
  std::vector<RunRecord> runs;
  for (std::uint64_t seed = 1; seed <= 12 && runs.size() < 2; ++seed) {
    c.sampling_seed = seed;
    auto r = RunRecorded<P>(SmallModel(), kSelectA, kSamplingSteps, c);
    ASSERT_TRUE(r.ok()) << r.error().ToString();
    if (r->tokens.size() != kSamplingSteps + 1u) continue;
    if (!runs.empty() && runs[0].tokens == r->tokens) continue;
    runs.push_back(std::move(*r));
  }
  ASSERT_EQ(runs.size(), 2u) << "no two seeds sampled two different full stories";
  const RunRecord* a = &runs[0];
  const RunRecord* b = &runs[1];
  ASSERT_EQ(a->openings.size(), b->openings.size());
  std::size_t client_inputs = 0;
  for (std::size_t i = 0; i < a->openings.size(); ++i) {
    EXPECT_EQ(a->openings[i].requests, b->openings[i].requests) << a->openings[i].Name();
    EXPECT_EQ(a->openings[i].n, b->openings[i].n) << a->openings[i].Name();
    client_inputs += a->openings[i].kind == Kind::kClientIn;
  }
  EXPECT_GT(client_inputs, kSelectA.size()) << "no noise input recorded";
  for (std::size_t p = 0; p < 3; ++p) {
    EXPECT_EQ(a->sent[p], b->sent[p]) << "party " << p << " sent other messages";
    EXPECT_EQ(a->rounds[p], b->rounds[p]);
  }
}

TEST(SecureView, SamplingViewFollowsPublicShapesSemiHonest) {
  ExpectSamplingViewFollowsPublicShapes<mpc::SemiHonest>();
}
TEST(SecureView, SamplingViewFollowsPublicShapesMalicious) {
  ExpectSamplingViewFollowsPublicShapes<mpc::Spdz2k>();
}

TEST(SecureView, MpcacheDpRequestsFollowPublicShapesSemiHonest) {
  ExpectDpRequestsFollowPublicShapes<mpc::SemiHonest>();
}
TEST(SecureView, MpcacheDpRequestsFollowPublicShapesMalicious) {
  ExpectDpRequestsFollowPublicShapes<mpc::Spdz2k>();
}

#ifdef MPCACHE_VIEW_FULL  // the suite runs the malicious one (its 40 exact runs are the slowest)
TEST(SecureView, MpcacheLevelTwoSelectionStaysSecretSemiHonest) {
  ExpectSelectionStaysSecret<mpc::SemiHonest>(LevelTwoViewPolicy(), kLevelTwoSteps);
}
#endif
TEST(SecureView, MpcacheLevelTwoSelectionStaysSecretMalicious) {
  ExpectSelectionStaysSecret<mpc::Spdz2k>(LevelTwoViewPolicy(), kLevelTwoSteps);
}
TEST(SecureView, MpcacheSelectionStaysSecretSemiHonest) {
  ExpectSelectionStaysSecret<mpc::SemiHonest>(ViewPolicy(), kMpcacheSteps);
}
TEST(SecureView, MpcacheSelectionStaysSecretMalicious) {
  ExpectSelectionStaysSecret<mpc::Spdz2k>(ViewPolicy(), kMpcacheSteps);
}

}  // namespace
}  // namespace mpcache::infer::viewtest
