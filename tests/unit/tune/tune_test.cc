#include <gtest/gtest.h>

#include <array>
#include <filesystem>
#include <fstream>

#include "common/config.h"
#include "tune/report.h"
#include "tune/search.h"
#include "tune/workload_cost.h"

namespace mpcache::tune {
namespace {

TEST(Floor, ParsesBothKindsAndNamesWhatIsWrong) {
  auto a = ParseFloor("agreement:0.99");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->kind, Floor::Kind::kAgreement);
  EXPECT_DOUBLE_EQ(a->value, 0.99);
  auto l = ParseFloor("loss:0.02");
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->kind, Floor::Kind::kLoss);
  for (const char* bad : {"0.99", "agreement:", "agreement:1.5", "agreement:0", "accuracy:0.9",
                          "loss:-1", "loss:x", "agreement:0.9x"}) {
    auto r = ParseFloor(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().ToString().find("agreement:X"), std::string::npos) << bad;
  }
  model::Fidelity f;
  f.agreement = 0.98;
  f.ll_loss = 0.01;
  EXPECT_FALSE(a->Keeps(f));
  EXPECT_TRUE(l->Keeps(f));
  f.agreement = 0.99;
  EXPECT_TRUE(a->Keeps(f));  // the floor itself keeps it
  // With a margin of z standard errors.
  Floor az = *a, lz = *l;
  az.z = lz.z = 1.645;
  f.agreement = 0.995;
  f.agreement_se = 0.004;  // 0.995 - 0.00658 < 0.99
  EXPECT_FALSE(az.Keeps(f));
  f.agreement_se = 0.003;  // 0.995 - 0.00494 >= 0.99
  EXPECT_TRUE(az.Keeps(f));
  f.ll_loss = 0.015;
  f.ll_loss_se = 0.004;  // 0.015 + 0.00658 > 0.02
  EXPECT_FALSE(lz.Keeps(f));
  f.ll_loss_se = 0.003;
  EXPECT_TRUE(lz.Keeps(f));
}

TEST(Floor, ConfidenceIsTheOneSidedNormalQuantile) {
  EXPECT_NEAR(*ZForConfidence(0.95), 1.6449, 1e-4);
  EXPECT_NEAR(*ZForConfidence(0.975), 1.9600, 1e-4);
  EXPECT_NEAR(*ZForConfidence(0.5), 0.0, 1e-9);
  for (double bad : {0.4, 1.0, 1.5}) {
    auto r = ZForConfidence(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().ToString().find("--confidence"), std::string::npos);
  }
}

TEST(Grid, EveryCandidateIsValidAndFitsTheContext) {
  for (Grid g : {Grid::kQuick, Grid::kStandard, Grid::kWide}) {
    const auto grid = CandidateGrid(g, 512);
    EXPECT_GE(grid.size(), g == Grid::kQuick ? 8u : 25u);
    for (const auto& p : grid) EXPECT_TRUE(p.Validate().ok()) << Label(p);
  }
  for (const auto& p : CandidateGrid(Grid::kStandard, 64)) EXPECT_LE(p.cluster_tokens * 4, 64);
  EXPECT_FALSE(ParseGrid("huge").ok());
}

// What mpcache-tune writes is read back by the party file's parser as the same policy.
TEST(Fragment, RoundTripsThroughThePartyFileParser) {
  std::vector<std::optional<model::MpcachePolicy>> all{std::nullopt};
  for (const auto& p : CandidateGrid(Grid::kStandard, 512)) all.push_back(p);
  for (const auto& p : all) {
    const std::string yaml = FragmentYaml(p, "a comment\nof two lines");
    EXPECT_EQ(yaml.rfind("# a comment\n# of two lines\nmpcache:\n", 0), 0u) << yaml;
    auto k = config::ParseMpcacheFragment(yaml, "fragment.yaml");
    ASSERT_TRUE(k.ok()) << k.error().ToString() << "\n" << yaml;
    EXPECT_EQ(k->cache == config::CacheMode::kMpcache, p.has_value()) << yaml;
    if (!p) continue;
    const model::MpcachePolicy q = model::PolicyFromConfig(*k);
    EXPECT_EQ(Label(q), Label(p)) << yaml;
    EXPECT_EQ(q.cluster_tokens, p->cluster_tokens);
    EXPECT_EQ(q.keep_ratio, p->keep_ratio);
    EXPECT_EQ(q.two_levels(), p->two_levels());
    if (p->two_levels()) {
      EXPECT_EQ(q.level2_tokens, p->level2_tokens);
      EXPECT_EQ(q.level2_keep_ratio, p->level2_keep_ratio);
    }
    EXPECT_EQ(q.alpha, p->alpha);
    EXPECT_EQ(q.representative, p->representative);
    EXPECT_EQ(q.share_layers, p->share_layers);
    EXPECT_EQ(q.layer_share_decay, p->layer_share_decay);
    EXPECT_EQ(q.residual, p->residual);
    EXPECT_EQ(q.static_keep_ratio, p->static_keep_ratio);
    EXPECT_EQ(q.observation_window, p->observation_window);
    EXPECT_EQ(q.impact_weight, p->impact_weight);
    EXPECT_EQ(q.reveal, p->reveal);
  }
  // A fragment with a stray key is refused, naming it.
  auto bad = config::ParseMpcacheFragment("mpcache:\n  cache: mpcache\n  keep: 0.2\n", "f.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().ToString().find("keep"), std::string::npos) << bad.error().ToString();
}

Evaluated Ev(double bytes, double agreement, double loss, const Floor& f) {
  Evaluated e;
  model::MpcachePolicy p;
  p.keep_ratio = agreement / 2;  // any distinct policy
  e.policy = p;
  e.cost.bytes = bytes;
  e.cost.rounds = 1000 - bytes;  // the other order
  e.fidelity.agreement = agreement;
  e.fidelity.ll_loss = loss;
  e.keeps = f.Keeps(e.fidelity);
  return e;
}

TEST(Rank, FrontierIsParetoAndTheChoiceIsTheCheapestThatKeeps) {
  const Floor f{Floor::Kind::kAgreement, 0.95};
  SearchResult r;
  Evaluated full;
  full.cost.bytes = 100;
  full.keeps = true;
  r.evaluated.push_back(full);                    // 0: the full cache
  r.evaluated.push_back(Ev(40, 0.90, 0.1, f));    // 1: cheapest, below the floor
  r.evaluated.push_back(Ev(50, 0.96, 0.05, f));   // 2: keeps
  r.evaluated.push_back(Ev(60, 0.955, 0.04, f));  // 3: keeps, dominated by 2
  r.evaluated.push_back(Ev(50, 0.97, 0.03, f));   // 4: same cost as 2, more accurate
  r.evaluated.push_back(Ev(80, 0.99, 0.01, f));   // 5: keeps
  Rank(r, f, Objective::kBytes);
  EXPECT_EQ(r.frontier, (std::vector<std::size_t>{1, 4, 5, 0}));
  EXPECT_EQ(r.chosen, 4u);
  // Nothing keeps a floor of 0.999 but the full cache.
  const Floor strict{Floor::Kind::kAgreement, 0.999};
  for (std::size_t i = 1; i < r.evaluated.size(); ++i) {
    r.evaluated[i].keeps = strict.Keeps(r.evaluated[i].fidelity);
  }
  Rank(r, strict, Objective::kBytes);
  EXPECT_EQ(r.chosen, 0u);
  // Rounds reverse the cost order; a loss floor reads the loss.
  const Floor loss{Floor::Kind::kLoss, 0.045};
  for (std::size_t i = 1; i < r.evaluated.size(); ++i) {
    r.evaluated[i].keeps = loss.Keeps(r.evaluated[i].fidelity);
  }
  r.evaluated[0].cost.rounds = 2000;
  Rank(r, loss, Objective::kRounds);
  EXPECT_EQ(r.chosen, 5u);  // 920 rounds, the fewest; loss 0.01
  EXPECT_EQ(r.frontier, (std::vector<std::size_t>{5, 0}));
  r.evaluated[5].keeps = false;
  Rank(r, loss, Objective::kRounds);
  EXPECT_EQ(r.chosen, 3u);  // then 940 rounds (loss 0.04) before 950 (0.03)
}

// The plot is a PNG (gnuplot: scripts/install-deps.sh --tests installs it); a path it cannot
// write is an error naming it.
TEST(Plot, WritesAPngOfTheFrontier) {
  const Floor f{Floor::Kind::kAgreement, 0.95};
  SearchResult r;
  Evaluated full;
  full.cost.bytes = 3e6;
  full.keeps = true;
  r.evaluated = {full, Ev(2e6, 0.9, 0.1, f), Ev(2.5e6, 0.97, 0.02, f)};
  Rank(r, f, Objective::kBytes);
  const auto dir = std::filesystem::temp_directory_path() / "tune_plot_test";
  std::filesystem::create_directories(dir);
  const std::string png = (dir / "it's a frontier.png").string();  // a quote in the name
  std::filesystem::remove(png);
  const Status st = PlotFrontier(r, f, Objective::kBytes, "test's title", png);
  ASSERT_TRUE(st.ok()) << st.error().ToString();
  std::ifstream in(png, std::ios::binary);
  char magic[8] = {};
  in.read(magic, 8);
  EXPECT_EQ(std::string(magic + 1, 3), "PNG");
  const Status bad = PlotFrontier(r, f, Objective::kBytes, "t", "/nonexistent-dir/x.png");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().ToString().find("/nonexistent-dir/x.png"), std::string::npos)
      << bad.error().ToString();
  std::filesystem::remove_all(dir);
}

// The fit recovers the coefficients of exact synthetic timings, and falls back to the best
// non-negative subset when the unconstrained fit wants a negative one.
TEST(TimeModel, FitRecoversPerRoundPerByteAndPerComparedBitCosts) {
  std::vector<Measurement> ms;
  const double fixed = 0.05, per_round = 2e-4, per_byte = 3e-8, per_bit = 2e-7;
  const std::vector<std::array<double, 3>> points = {
      {50, 1e6, 2e5}, {90, 2e6, 1e5}, {60, 5e6, 9e5}, {120, 3e5, 4e5}, {70, 8e5, 6e5}};
  for (const auto& [rounds, bytes, bits] : points) {
    Measurement m;
    m.predicted["softmax"] = {static_cast<std::uint64_t>(bytes), static_cast<std::uint64_t>(rounds),
                              static_cast<std::uint64_t>(bits)};
    m.predicted["norms"] = {12345, 99, 777};  // fixed: not in the fit
    m.measured.phases["softmax"].seconds = per_round * rounds + per_byte * bytes + per_bit * bits;
    m.measured.phases["norms"].seconds = fixed;
    ms.push_back(m);
  }
  auto t = FitTimeModel(ms);
  ASSERT_TRUE(t.ok());
  EXPECT_NEAR(t->fixed_seconds, fixed, 1e-12);
  EXPECT_NEAR(t->per_round, per_round, 1e-9);
  EXPECT_NEAR(t->per_byte, per_byte, 1e-13);
  EXPECT_NEAR(t->per_compared_bit, per_bit, 1e-12);
  EXPECT_NEAR(t->Seconds(ms[1].predicted), fixed + per_round * 90 + per_byte * 2e6 + per_bit * 1e5,
              1e-9);
  // Times that fall with the rounds: the rounds' coefficient is 0, never negative.
  for (auto& m : ms) {
    const auto& c = m.predicted["softmax"];
    m.measured.phases["softmax"].seconds =
        per_byte * static_cast<double>(c.bytes) - 1e-4 * static_cast<double>(c.rounds) + 0.05;
  }
  t = FitTimeModel(ms);
  ASSERT_TRUE(t.ok());
  EXPECT_GE(t->per_round, 0);
  EXPECT_GE(t->per_byte, 0);
  EXPECT_GE(t->per_compared_bit, 0);
  EXPECT_FALSE(FitTimeModel({}).ok());
}

// The workload's decoding steps: positions p .. T - 2 of every reference, at their
// contexts (after an eviction, kept(p) + pos - p), each costed by the step model.
TEST(WorkloadCost, PerTokenIsTheMeanOfTheWorkloadsSteps) {
  model::ModelConfig c;
  c.dim = 64;
  c.hidden_dim = 172;
  c.n_layers = 2;
  c.n_heads = 8;
  c.n_kv_heads = 4;
  c.vocab_size = 64;
  c.seq_len = 256;
  CostSetting s;
  s.config = c;
  CostModel m(s);
  model::Workload wl;
  wl.tokens = {std::vector<int>(120, 1), std::vector<int>(70, 1)};
  wl.prompt_len = {40, 10};
  wl.steps = 120;
  model::MpcachePolicy p;
  p.cluster_tokens = 16;
  p.keep_ratio = 0.25;
  p.static_keep_ratio = 0.5;
  double bytes = 0, rounds = 0;
  int n = 0;
  model::MpcachePolicy stepping = p;
  stepping.static_keep_ratio = 1;
  for (std::size_t i = 0; i < 2; ++i) {
    const int pl = static_cast<int>(wl.prompt_len[i]);
    const int kept = model::EvictionFor(p, pl).kept();
    for (int pos = pl; pos + 1 < static_cast<int>(wl.tokens[i].size()); ++pos) {
      auto step = m.Step(stepping, kept + pos - pl);
      ASSERT_TRUE(step.ok()) << step.error().ToString();
      bytes += static_cast<double>(TotalBytes(*step));
      rounds += static_cast<double>(TotalRounds(*step));
      ++n;
    }
  }
  // Plus one cluster's making per cluster that becomes a candidate after the prompt while
  // the policy selects.
  infer::StepCostQuery q;
  q.config = c;
  q.policy = stepping;
  q.context = 1;
  auto one = infer::PredictNewClusterCost(q);
  ASSERT_TRUE(one.ok()) << one.error().ToString();
  EXPECT_GT(one->bytes, 0u);
  EXPECT_GT(one->rounds, 0u);
  ASSERT_EQ(model::EvictionFor(p, 40).kept(), 24);  // the 10-token prompt is all sink
  ASSERT_EQ(model::EvictionFor(p, 10).kept(), 10);
  // Reference 0: 25 rows at its first step (2 clusters: no selection), 103 at its last (7
  // clusters, 5 candidates, 1 kept): 5 clusters made. Reference 1: 11 rows, then 69 (5
  // clusters, 3 candidates, 1 kept): 3.
  ASSERT_FALSE(model::ShapeFor(stepping, 25).selects());
  ASSERT_FALSE(model::ShapeFor(stepping, 11).selects());
  ASSERT_EQ(model::ShapeFor(stepping, 103).candidates, 5);
  ASSERT_TRUE(model::ShapeFor(stepping, 103).selects());
  ASSERT_EQ(model::ShapeFor(stepping, 69).candidates, 3);
  ASSERT_TRUE(model::ShapeFor(stepping, 69).selects());
  const double clusters = 5 + 3;
  bytes += clusters * static_cast<double>(one->bytes);
  rounds += clusters * static_cast<double>(one->rounds);
  auto got = m.PerToken(p, wl);
  ASSERT_TRUE(got.ok()) << got.error().ToString();
  EXPECT_EQ(n, 79 + 59);
  EXPECT_DOUBLE_EQ(got->bytes, bytes / n);
  EXPECT_DOUBLE_EQ(got->rounds, rounds / n);
  // Eviction makes the steps cheaper than without it (fewer cached rows).
  model::MpcachePolicy keep_all = p;
  keep_all.static_keep_ratio = 1;
  auto no_evict = m.PerToken(keep_all, wl);
  ASSERT_TRUE(no_evict.ok());
  EXPECT_LT(got->bytes, no_evict->bytes);
  wl.tokens = {std::vector<int>(11, 1)};
  wl.prompt_len = {10};
  EXPECT_FALSE(m.PerToken(p, wl).ok());
}

}  // namespace
}  // namespace mpcache::tune
