// MPCache's leakage modes (infer/mpcache_kv.h, model/mpcache_policy.h):
//   plain  the cluster scores are opened (after the MAC check in malicious mode) and the
//          selection made in the clear: the same selection as the secret one and as the
//          plaintext twin, exactly; gather and scatter are local;
//   dp     the opened scores carry the sum of the three parties' own Laplace noises: the
//          opened vector equals the exact scores plus those noises (mod 2^64), the
//          selection is the top-k of what was opened, each party's noise has the configured
//          scale, and every revealed selection spends dp_epsilon.
// Costs per selecting layer: scores 1 round (the keys' and representatives' product), the
// noise 1 round (dp), the opening 1 round, the MAC check 3 rounds (malicious); the mix 1.
#include <gtest/gtest.h>

#include <cmath>

#include "common/prg.h"
#include "infer/in_process.h"
#include "infer/mpcache_kv.h"
#include "infer/ring_model.h"
#include "model/synth.h"
#include "preproc/local_parties.h"
#include "unit/compare/cmp_harness.h"
#include "unit/infer/infer_test_util.h"

namespace mpcache::infer {
namespace {

using mpc::Shares;
using mpc::testing::RevealChecked;
using mpc::testing::ShareVec;
using Vec = std::vector<std::uint64_t>;

Vec Small(std::size_t n, Prg& prg) {
  return testing::SmallSigned(n, prg);
}

struct Step {
  Vec scores, mix, revealed;
  std::vector<Vec> noise;  // [party]
  net::PhaseCounters score_cost, mix_cost;
  std::uint64_t reveals = 0;
  double epsilon = 0;
};

// One layer holding the rows of `keys` in the policy's clusters; `steps` selections in a row, each
// with a fresh query; returns what every step opened and cost (party 0's counters, every party's
// noise).
template <typename P>
std::vector<Step> RunReveals(const model::MpcachePolicy& policy, int steps, const Vec& keys,
                             const Vec& values, const std::vector<Vec>& qs, const Vec& probs) {
  model::ModelConfig config;
  config.dim = 12;
  config.n_heads = 4;
  config.n_kv_heads = 2;
  config.n_layers = 1;
  config.seq_len = 128;
  auto lp = preproc::LocalParties<P>::Create(preproc::LocalPartiesFromSeed(91));
  EXPECT_TRUE(lp.ok());
  if (!lp.ok()) return {};
  auto res = (*lp)->Run([&](mpc::BinaryContext<P>& b) -> Result<std::vector<Step>> {
    mpc::Context<P>& ctx = b.arith();
    MPCACHE_ASSIGN_OR_RETURN(auto mem, MpcacheKv<P>::Create(b, config, 128, 8, policy, 40, 16));
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> sk, ShareVec(ctx, keys));
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> sv, ShareVec(ctx, values));
    MPCACHE_RETURN_IF_ERROR(mem->LoadPrefill(ctx, 0, sk, sv));
    MPCACHE_RETURN_IF_ERROR(mem->EndPrefill(ctx, 0));
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> sp, ShareVec(ctx, probs));
    std::vector<Step> out;
    for (int s = 0; s < steps; ++s) {
      MPCACHE_ASSIGN_OR_RETURN(Shares<P> sq, ShareVec(ctx, qs[static_cast<std::size_t>(s)]));
      const model::KvPlan plan = mem->Plan(0);
      Step st;
      const auto t0 = ctx.stats().Total();
      MPCACHE_ASSIGN_OR_RETURN(Shares<P> sc, mem->Scores(ctx, 0, plan, sq));
      const auto t1 = ctx.stats().Total();
      MPCACHE_ASSIGN_OR_RETURN(Shares<P> o, mem->Mix(ctx, 0, plan, sp));
      const auto t2 = ctx.stats().Total();
      st.score_cost.rounds = t1.rounds - t0.rounds;
      st.score_cost.bytes_sent = t1.bytes_sent - t0.bytes_sent;
      st.mix_cost.rounds = t2.rounds - t1.rounds;
      st.mix_cost.bytes_sent = t2.bytes_sent - t1.bytes_sent;
      st.revealed = mem->last_revealed();
      st.noise.push_back(mem->last_noise());  // this party's; gathered below
      MPCACHE_ASSIGN_OR_RETURN(st.scores, RevealChecked(b, sc));
      MPCACHE_ASSIGN_OR_RETURN(st.mix, RevealChecked(b, o));
      st.reveals = mem->revealed_selections();
      st.epsilon = mem->epsilon_spent();
      out.push_back(std::move(st));
    }
    return out;
  });
  std::vector<Step> steps_out;
  for (const auto& r : res) EXPECT_TRUE(r.ok()) << r.error().ToString();
  if (!res[0].ok() || !res[1].ok() || !res[2].ok()) return {};
  steps_out = *res[0];
  for (std::size_t s = 0; s < steps_out.size(); ++s) {
    steps_out[s].noise = {(*res[0])[s].noise[0], (*res[1])[s].noise[0], (*res[2])[s].noise[0]};
    EXPECT_EQ((*res[1])[s].revealed, steps_out[s].revealed) << "parties opened different scores";
  }
  return steps_out;
}

// The plaintext twin of one step given the selection `picked`.
void Twin(const model::MpcachePolicy& policy, std::size_t L, const Vec& keys, const Vec& values,
          const Vec& q, const Vec& probs, const std::vector<int>& picked, Vec& scores, Vec& mix) {
  const std::size_t nh = 4, hs = 3, kv = 6;
  const model::SelectionShape shape = model::ShapeFor(policy, static_cast<int>(L));
  const std::vector<int> rows = model::AttendedPositions(shape, picked);
  const std::size_t A = rows.size();
  scores.assign(nh * A, 0);
  mix.assign(nh * hs, 0);
  for (std::size_t h = 0; h < nh; ++h) {
    for (std::size_t t = 0; t < A; ++t) {
      const auto pos = static_cast<std::size_t>(rows[t]);
      for (std::size_t i = 0; i < hs; ++i) {
        scores[h * A + t] += q[h * hs + i] * keys[pos * kv + (h / 2) * hs + i];
        mix[h * hs + i] += probs[h * A + t] * values[pos * kv + (h / 2) * hs + i];
      }
    }
  }
}

// The exact cluster scores (sum over heads of q . r_c) of the candidates.
Vec ClusterScores(const model::MpcachePolicy& policy, std::size_t L, const Vec& keys,
                  const Vec& q) {
  const std::size_t nh = 4, hs = 3, kv = 6, cs = static_cast<std::size_t>(policy.cluster_tokens);
  const model::SelectionShape shape = model::ShapeFor(policy, static_cast<int>(L));
  Vec out(static_cast<std::size_t>(shape.candidates), 0);
  for (std::size_t c = 0; c < out.size(); ++c) {
    const Vec r = model::ClusterRepresentative(policy, keys.data() + (c + 1) * cs * kv, cs, kv);
    for (std::size_t h = 0; h < nh; ++h) {
      for (std::size_t i = 0; i < hs; ++i) out[c] += q[h * hs + i] * r[(h / 2) * hs + i];
    }
  }
  return out;
}

template <typename P>
void ExpectPlainEqualsTheSecretSelection() {
  model::MpcachePolicy policy;
  policy.cluster_tokens = 2;
  policy.keep_ratio = 0.4;
  policy.reveal = config::Reveal::kPlain;
  const std::size_t L = 21, nh = 4, hs = 3, kv = 6;
  const model::SelectionShape shape = model::ShapeFor(policy, static_cast<int>(L));
  ASSERT_TRUE(shape.selects());
  Prg prg(TestSeed(93));
  const Vec keys = Small(L * kv, prg), values = Small(L * kv, prg);
  const std::vector<Vec> qs{Small(nh * hs, prg)};
  const Vec probs = Small(nh * static_cast<std::size_t>(shape.attended()), prg);
  const std::vector<Step> steps = RunReveals<P>(policy, 1, keys, values, qs, probs);
  ASSERT_EQ(steps.size(), 1u);
  const Vec exact = ClusterScores(policy, L, keys, qs[0]);
  EXPECT_EQ(steps[0].revealed, exact) << "plain opens the exact scores";
  Vec want_scores, want_mix;
  Twin(policy, L, keys, values, qs[0], probs,
       model::TopKIndices(exact, static_cast<std::size_t>(shape.keep)), want_scores, want_mix);
  EXPECT_EQ(steps[0].scores, want_scores);
  EXPECT_EQ(steps[0].mix, want_mix);
  EXPECT_EQ(steps[0].reveals, 1u);
  EXPECT_EQ(steps[0].epsilon, 0.0);
  // 1 (product) + 1 (open) [+ 3 MAC check]; the mix: its one product, no scatter.
  const std::uint64_t B = mpc::OpenBytes<P>();
  const auto m = static_cast<std::uint64_t>(shape.candidates);
  EXPECT_EQ(steps[0].score_cost.rounds, P::kMalicious ? 5u : 2u);
  if constexpr (!P::kMalicious) {
    EXPECT_EQ(steps[0].score_cost.bytes_sent, 2 * B * (nh * hs + m));
  }
  EXPECT_EQ(steps[0].mix_cost.rounds, 1u);
  EXPECT_EQ(steps[0].mix_cost.bytes_sent, 2 * B * nh * L);
}

template <typename P>
void ExpectDpNoiseIsTheSumOfThePartiesLaplaceDraws() {
  model::MpcachePolicy policy;
  policy.cluster_tokens = 1;
  policy.keep_ratio = 0.5;
  policy.reveal = config::Reveal::kDp;
  policy.dp_epsilon = 0.5;
  policy.dp_sensitivity = 500;  // scale b = 1000 score units (scores here span ~2^11)
  const std::size_t L = 40, nh = 4, hs = 3, kv = 6;
  const int steps_n = 8;
  const model::SelectionShape shape = model::ShapeFor(policy, static_cast<int>(L));
  Prg prg(TestSeed(95));
  const Vec keys = Small(L * kv, prg), values = Small(L * kv, prg);
  std::vector<Vec> qs;
  for (int s = 0; s < steps_n; ++s) qs.push_back(Small(nh * hs, prg));
  const Vec probs = Small(nh * static_cast<std::size_t>(shape.attended()), prg);
  const std::vector<Step> steps = RunReveals<P>(policy, steps_n, keys, values, qs, probs);
  ASSERT_EQ(steps.size(), static_cast<std::size_t>(steps_n));
  const double unit = std::ldexp(1.0, policy.ScoreFracBits(16));
  double abs_sum = 0;
  std::size_t draws = 0;
  bool differs = false;
  for (int s = 0; s < steps_n; ++s) {
    const Step& st = steps[static_cast<std::size_t>(s)];
    const Vec exact = ClusterScores(policy, L, keys, qs[static_cast<std::size_t>(s)]);
    ASSERT_EQ(st.revealed.size(), exact.size());
    for (std::size_t c = 0; c < exact.size(); ++c) {
      const std::uint64_t noise = st.noise[0][c] + st.noise[1][c] + st.noise[2][c];
      EXPECT_EQ(st.revealed[c], exact[c] + noise) << "step " << s << " cluster " << c;
      for (const Vec& n : st.noise) {
        abs_sum += std::abs(static_cast<double>(static_cast<std::int64_t>(n[c]))) / unit;
        ++draws;
      }
    }
    const std::vector<int> picked =
        model::TopKIndices(st.revealed, static_cast<std::size_t>(shape.keep));
    differs = differs || picked != model::TopKIndices(exact, static_cast<std::size_t>(shape.keep));
    Vec want_scores, want_mix;
    Twin(policy, L, keys, values, qs[static_cast<std::size_t>(s)], probs, picked, want_scores,
         want_mix);
    EXPECT_EQ(st.scores, want_scores) << "step " << s;
    EXPECT_EQ(st.mix, want_mix) << "step " << s;
    EXPECT_EQ(st.reveals, static_cast<std::uint64_t>(s + 1));
    EXPECT_DOUBLE_EQ(st.epsilon, 0.5 * (s + 1));
    // + 1 round for the noise input.
    EXPECT_EQ(st.score_cost.rounds, P::kMalicious ? 6u : 3u);
  }
  // E|Laplace(b)| = b = 1000: 3 x 38 x 8 = 912 draws put the mean within 10% (3 sigma).
  EXPECT_NEAR(abs_sum / static_cast<double>(draws), 1000, 100) << draws << " draws";
  EXPECT_TRUE(differs) << "the noise never changed a selection at this scale";
}

TEST(MpcacheReveal, PlainEqualsTheSecretSelectionSemiHonest) {
  ExpectPlainEqualsTheSecretSelection<mpc::SemiHonest>();
}
TEST(MpcacheReveal, PlainEqualsTheSecretSelectionMalicious) {
  ExpectPlainEqualsTheSecretSelection<mpc::Spdz2k>();
}
TEST(MpcacheReveal, DpOpensTheScoresPlusThePartiesNoiseSemiHonest) {
  ExpectDpNoiseIsTheSumOfThePartiesLaplaceDraws<mpc::SemiHonest>();
}
TEST(MpcacheReveal, DpOpensTheScoresPlusThePartiesNoiseMalicious) {
  ExpectDpNoiseIsTheSumOfThePartiesLaplaceDraws<mpc::Spdz2k>();
}

// Whole generations with reveal: plain equal the fixed-point twin (the same selection as
// reveal: none), and report what they revealed.
void ExpectPlainGenerationMatches(int cluster, int level2, double level2_keep, int steps) {
  auto config = model::ParseDims("32x2x4x2x64x40x32");
  ASSERT_TRUE(config.ok());
  config->shared_classifier = true;
  auto w = model::MakeSyntheticWeights(*config, 7);
  ASSERT_TRUE(w.ok());
  auto ring = EncodeModel(*w, kRecommendedFracBits);
  ASSERT_TRUE(ring.ok());
  model::MpcachePolicy policy;
  policy.cluster_tokens = cluster;
  policy.keep_ratio = 0.4;
  policy.level2_tokens = level2;
  policy.level2_keep_ratio = level2_keep;
  model::FixedEngineOptions fo;
  fo.mpcache = policy;
  fo.kv_block_tokens = 4;
  const std::vector<int> prompt{1, 5, 9};
  const testing::PlainRun plain = testing::RunPlain(*w, prompt, steps, 1, fo);
  policy.reveal = config::Reveal::kPlain;
  InProcessOptions o;
  o.session.kv_block_tokens = 4;
  o.session.mpcache = policy;
  auto run = RunInProcess<mpc::Spdz2k>(*ring, prompt, 1, steps, o);
  ASSERT_TRUE(run.ok()) << run.error().ToString();
  EXPECT_EQ(run->tokens, plain.fixed_tokens);
  EXPECT_GT(run->report.revealed_selections, 0u);
  EXPECT_EQ(run->report.epsilon_spent, 0.0);
}
TEST(MpcacheReveal, PlainGenerationMatchesPlaintextMalicious) {
  ExpectPlainGenerationMatches(2, 0, 0.2, 20);
}
// Level 2: the clusters' and the candidates' sub-scores opened together, both selections
// public.
TEST(MpcacheReveal, PlainLevelTwoGenerationMatchesPlaintextMalicious) {
  ExpectPlainGenerationMatches(4, 2, 0.25, 32);
}

}  // namespace
}  // namespace mpcache::infer
