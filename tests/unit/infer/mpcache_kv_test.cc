// MPCache's secure KV memory (infer/mpcache_kv.h) against its plaintext twin
// (model/mpcache_policy.h), exactly (mod 2^64: every step is exact ring arithmetic), in both
// security modes and with both representatives; and its rounds and bytes held to the
// header's theory:
//   Scores: 1 (q, keys and representatives) + LtzRounds(64) + LtzRounds(RankBits(m)) (rank)
//           + 1 (mask S) + 1 (gather) rounds; B x (dim + k m + m n_heads cs) + the rank's
//           comparisons per peer;
//   Mix:    1 (scatter) + 1 (mix) rounds; B x (n_heads cs k + n_heads L) per peer.
// With level 2 (sub-clusters of cs2, s = cs / cs2, k2 of the g = k s gathered kept): the
// first gather also carries the s sub-scores (B m (n_heads cs + s)); then the rank of g
// sub-scores (LtzRounds(64) + LtzRounds(RankBits(g))), mask S2 (B k2 g, 1 round) and the
// second gather (B g n_heads cs2, 1 round); Mix adds the first scatter (B n_heads cs2 k2, 1).
// With the residual path: m more columns per head (the mean keys' scores, within the mean's
// one truncation of the twin's) and no round more; Mix opens n_heads (L + m) weights.
#include "infer/mpcache_kv.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "common/prg.h"
#include "mpc/compare/compare.h"
#include "mpc/compare/rank_select.h"
#include "preproc/local_parties.h"
#include "unit/compare/cmp_harness.h"
#include "unit/infer/infer_test_util.h"

namespace mpcache::infer {
namespace {

using mpc::Shares;
using mpc::testing::RevealChecked;
using mpc::testing::ShareVec;
using Vec = std::vector<std::uint64_t>;

struct Case {
  int cluster = 2, length = 13;
  double keep = 0.5;
  model::Representative rep = model::Representative::kMinMax;
  int block = 4;
  int level2 = 0;  // level-2 sub-cluster tokens (0: one level)
  double level2_keep = 0.2;
  bool residual = false;
  // A prompt query in the sigmoid eviction's observation window: its sigmoids are scattered
  // with the weights (the scatter's openings double; the mix is unchanged). The score cost
  // is then not checked (the representatives are computed in Scores, not at EndPrefill).
  bool observe_sigmoid = false;
};

Vec Small(std::size_t n, Prg& prg) {
  return testing::SmallSigned(n, prg);
}

template <typename P>
void ExpectTwin(const Case& c) {
  model::ModelConfig config;
  config.dim = 12;
  config.n_heads = 4;
  config.n_kv_heads = 2;
  config.n_layers = 1;
  config.seq_len = 64;
  const std::size_t nh = 4, hs = 3, kv = 6, L = static_cast<std::size_t>(c.length);
  model::MpcachePolicy policy;
  policy.cluster_tokens = c.cluster;
  policy.keep_ratio = c.keep;
  policy.representative = c.rep;
  policy.level2_tokens = c.level2;
  policy.level2_keep_ratio = c.level2_keep;
  policy.residual = c.residual;
  if (c.observe_sigmoid) {
    policy.static_keep_ratio = 0.5;
    policy.eviction_score = model::EvictionScore::kSigmoid;
  }
  const model::SelectionShape shape = model::ShapeFor(policy, c.length);
  ASSERT_TRUE(shape.selects());
  ASSERT_EQ(shape.selects2(), c.level2 > 0);
  const auto cs = static_cast<std::size_t>(c.cluster),
             m = static_cast<std::size_t>(shape.candidates),
             k = static_cast<std::size_t>(shape.keep),
             A = static_cast<std::size_t>(shape.attended()),
             mv = static_cast<std::size_t>(shape.residual_columns()), W = A + mv;
  Prg prg(TestSeed(41));
  const Vec keys = Small(L * kv, prg), values = Small(L * kv, prg), q = Small(nh * hs, prg);
  const Vec probs = Small(nh * W, prg), sigmoids = Small(nh * W, prg);

  // The plaintext twin: representatives, cluster scores, the selection, and the products
  // over the attended positions.
  const auto s = static_cast<std::size_t>(shape.subs), cs2 = cs / s;
  const auto k2 = static_cast<std::size_t>(shape.keep2), g = k * s;
  const auto score = [&](const Vec& r) {
    std::uint64_t acc = 0;
    for (std::size_t h = 0; h < nh; ++h) {
      for (std::size_t i = 0; i < hs; ++i) acc += q[h * hs + i] * r[(h / 2) * hs + i];
    }
    return acc;
  };
  Vec cluster(m, 0), sub(m * s, 0);
  for (std::size_t cl = 0; cl < m; ++cl) {
    const std::uint64_t* first = keys.data() + (cl + 1) * cs * kv;
    cluster[cl] = score(model::ClusterRepresentative(policy, first, cs, kv));
    for (std::size_t u = 0; u < s; ++u) {
      sub[cl * s + u] = score(model::ClusterRepresentative(policy, first + u * cs2 * kv, cs2, kv));
    }
  }
  const std::vector<int> picked = model::TopKIndices(cluster, k);
  const std::vector<int> picked2 =
      model::TopKIndices(model::GatheredSubScores(shape, sub, picked), k2);
  const std::vector<int> rows =
      model::AttendedPositions(shape, picked, shape.selects2() ? picked2 : std::vector<int>{});
  ASSERT_EQ(rows.size(), A);
  Vec want_scores(nh * W, 0), want_mix(nh * hs, 0);
  for (std::size_t h = 0; h < nh; ++h) {
    for (std::size_t t = 0; t < A; ++t) {
      const std::size_t pos = static_cast<std::size_t>(rows[t]);
      for (std::size_t i = 0; i < hs; ++i) {
        want_scores[h * W + t] += q[h * hs + i] * keys[pos * kv + (h / 2) * hs + i];
        want_mix[h * hs + i] += probs[h * W + t] * values[pos * kv + (h / 2) * hs + i];
      }
    }
  }
  // The residual path: the candidates' means (sum x MeanMultiplier >> kMeanShift; the secure
  // truncation may add one LSB), scored with the bias, the selected ones masked.
  std::vector<double> score_slack(nh * W, 0), mix_slack(nh * hs, 0);
  const auto mean = [&](const Vec& x, std::size_t cl, std::size_t i) {
    std::uint64_t sum = 0;
    for (std::size_t t = 0; t < cs; ++t) sum += x[((cl + 1) * cs + t) * kv + i];
    return static_cast<std::uint64_t>(
        static_cast<std::int64_t>(sum * model::MeanMultiplier(c.cluster)) >> model::kMeanShift);
  };
  const auto as_signed = [](std::uint64_t x) {
    return static_cast<double>(static_cast<std::int64_t>(x));
  };
  for (std::size_t h = 0; h < nh; ++h) {
    for (std::size_t cl = 0; cl < mv; ++cl) {
      const bool selected =
          std::find(picked.begin(), picked.end(), static_cast<int>(cl)) != picked.end();
      std::uint64_t acc = model::ResidualBiasRaw(c.cluster, static_cast<int>(hs), 16) -
                          (selected ? model::ResidualMaskRaw(static_cast<int>(hs), 16) : 0);
      for (std::size_t i = 0; i < hs; ++i) {
        const std::size_t f = (h / 2) * hs + i;
        acc += q[h * hs + i] * mean(keys, cl, f);
        score_slack[h * W + A + cl] += std::abs(as_signed(q[h * hs + i]));
        want_mix[h * hs + i] += probs[h * W + A + cl] * mean(values, cl, f);
        mix_slack[h * hs + i] += std::abs(as_signed(probs[h * W + A + cl]));
      }
      want_scores[h * W + A + cl] = acc;
    }
  }
  const auto expect_near = [&](const Vec& got, const Vec& want, const std::vector<double>& slack,
                               const char* what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (std::size_t i = 0; i < got.size(); ++i) {
      EXPECT_LE(std::abs(as_signed(got[i] - want[i])), slack[i]) << what << " " << i;
    }
  };

  struct Out {
    Vec scores, mix;
    net::PhaseCounters score_cost, mix_cost;
  };
  auto lp = preproc::LocalParties<P>::Create(preproc::LocalPartiesFromSeed(43));
  ASSERT_TRUE(lp.ok());
  auto res = (*lp)->Run([&](mpc::BinaryContext<P>& b) -> Result<Out> {
    mpc::Context<P>& ctx = b.arith();
    MPCACHE_ASSIGN_OR_RETURN(auto mem,
                             MpcacheKv<P>::Create(b, config, 64, c.block, policy, 40, 16));
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> sk, ShareVec(ctx, keys));
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> sv, ShareVec(ctx, values));
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> sq, ShareVec(ctx, q));
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> sp, ShareVec(ctx, probs));
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> sig, ShareVec(ctx, sigmoids));
    if (c.observe_sigmoid) MPCACHE_RETURN_IF_ERROR(mem->BeginPrompt(c.length));
    MPCACHE_RETURN_IF_ERROR(mem->LoadPrefill(ctx, 0, sk, sv));
    if (!c.observe_sigmoid) {
      MPCACHE_RETURN_IF_ERROR(mem->EndPrefill(ctx, 0));  // the representatives, not measured
    }
    const model::KvPlan plan = mem->Plan(0);
    Out out;
    auto t0 = ctx.stats().Total();
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> s, mem->Scores(ctx, 0, plan, sq));
    if (mem->ObservesScores(0) != c.observe_sigmoid) {
      return Internal("ObservesScores is " + std::to_string(mem->ObservesScores(0)));
    }
    if (c.observe_sigmoid) {
      // Without the sigmoids the observed query's Mix is refused, with them it runs.
      if (mem->Mix(ctx, 0, plan, sp).ok()) return Internal("Mix ran without the sigmoids");
      MPCACHE_RETURN_IF_ERROR(mem->ObserveScores(0, sig));
    }
    auto t1 = ctx.stats().Total();
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> o, mem->Mix(ctx, 0, plan, sp));
    auto t2 = ctx.stats().Total();
    out.score_cost.rounds = t1.rounds - t0.rounds;
    out.score_cost.bytes_sent = t1.bytes_sent - t0.bytes_sent;
    out.mix_cost.rounds = t2.rounds - t1.rounds;
    out.mix_cost.bytes_sent = t2.bytes_sent - t1.bytes_sent;
    MPCACHE_ASSIGN_OR_RETURN(out.scores, RevealChecked(b, s));
    MPCACHE_ASSIGN_OR_RETURN(out.mix, RevealChecked(b, o));
    return out;
  });
  for (const auto& r : res) ASSERT_TRUE(r.ok()) << r.error().ToString();
  expect_near(res[0]->scores, want_scores, score_slack, "score");  // exact but the residual's
  expect_near(res[0]->mix, want_mix, mix_slack, "mix");
  constexpr std::uint64_t B = mpc::OpenBytes<P>();
  const int rb = mpc::RankBits(m);
  const std::uint64_t rank_bytes =
      mpc::RankTopKBytesPerPeer(1, m, k, 64, mpc::OpenBytes<P>(64), mpc::OpenBytes<P>(rb), B) -
      2 * B * k * m;  // RowRankSelection: no values product
  std::uint64_t score_rounds =
      3 + static_cast<std::uint64_t>(mpc::LtzRounds(64) + mpc::LtzRounds(rb));
  const std::uint64_t zs = shape.selects2() ? s : 0;
  std::uint64_t score_bytes = 2 * (B * (nh * hs + k * m + m * (nh * cs + zs)) + rank_bytes);
  const std::uint64_t wrows = c.observe_sigmoid ? 2 * nh : nh;  // weights (and sigmoids)
  std::uint64_t mix_rounds = 2, mix_bytes = 2 * B * (wrows * cs * k + nh * (L + mv));
  if (shape.selects2()) {
    const int rb2 = mpc::RankBits(g);
    score_rounds += 2 + static_cast<std::uint64_t>(mpc::LtzRounds(64) + mpc::LtzRounds(rb2));
    score_bytes += 2 * (B * (k2 * g + g * nh * cs2) +
                        mpc::RankTopKBytesPerPeer(1, g, k2, 64, mpc::OpenBytes<P>(64),
                                                  mpc::OpenBytes<P>(rb2), B) -
                        2 * B * k2 * g);
    mix_rounds += 1;
    mix_bytes += 2 * B * wrows * cs2 * k2;
  }
  for (const auto& r : res) {
    if (!c.observe_sigmoid) {
      EXPECT_EQ(r->score_cost.rounds, score_rounds);
      EXPECT_EQ(r->score_cost.bytes_sent, score_bytes);
    }
    EXPECT_EQ(r->mix_cost.rounds, mix_rounds);
    EXPECT_EQ(r->mix_cost.bytes_sent, mix_bytes);
  }
}

template <typename P>
class MpcacheKvTest : public ::testing::Test {};
using Modes = ::testing::Types<mpc::SemiHonest, mpc::Spdz2k>;
TYPED_TEST_SUITE(MpcacheKvTest, Modes);

TYPED_TEST(MpcacheKvTest, MinMaxSelectionEqualsThePlaintextTwinAndCostsTheTheory) {
  ExpectTwin<TypeParam>({});
}
TYPED_TEST(MpcacheKvTest, MeanRepresentativeOverSeveralBlocks) {
  ExpectTwin<TypeParam>({3, 29, 0.3, model::Representative::kMean, 5});
}
// 9 clusters of 4 (7 candidates, 3 kept), sub-clusters of 2: 6 gathered, 4 attended.
TYPED_TEST(MpcacheKvTest, LevelTwoMinMaxSubClustersEqualTheTwinAndCostTheTheory) {
  ExpectTwin<TypeParam>({4, 35, 0.5, model::Representative::kMinMax, 4, 2, 0.4});
}
// The residual path: the 4 skipped candidates of 7 as mean-key virtual tokens, the 3 selected
// masked; with level 2 as well.
TYPED_TEST(MpcacheKvTest, ResidualPathColumnsFollowTheTwinAndCostNoRound) {
  ExpectTwin<TypeParam>({4, 35, 0.5, model::Representative::kMinMax, 4, 0, 0.2, true});
  ExpectTwin<TypeParam>({4, 35, 0.5, model::Representative::kMean, 4, 2, 0.4, true});
}
// Sub-clusters of single tokens (12 clusters of 3 over several blocks: 4 kept, 2 of their 12
// tokens attended), mean representatives.
TYPED_TEST(MpcacheKvTest, LevelTwoSingleTokenSubClustersWithTheMean) {
  ExpectTwin<TypeParam>({3, 36, 0.5, model::Representative::kMean, 5, 1, 0.2});
}

TYPED_TEST(MpcacheKvTest, SigmoidEvictionScattersTheSigmoidsInTheSameProducts) {
  Case c;
  c.observe_sigmoid = true;
  ExpectTwin<TypeParam>(c);
  c.level2 = 1;  // sub-clusters of one token: both scatters carry them
  c.cluster = 2;
  c.level2_keep = 0.3;
  ExpectTwin<TypeParam>(c);
}

}  // namespace
}  // namespace mpcache::infer
