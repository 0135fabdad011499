// The step cost model (infer/step_cost.h) against what the code measures, exactly:
//   - each kernel's closed form (Softmax, RmsNorm, SiluTimes, the ranked argmax, RowMax) against
//     SecureBackend's own theory() and the measured CommStats of a run on zero shares over the
//     in-memory mesh, at many widths, both security modes;
//   - PredictStepCost against infer::RunDecodeStep, phase by phase (bytes of the busiest party
//     and rounds), over a table of configurations: the full cache and MPCache variants, both
//     security modes, stories260K and a synthetic shape; and PredictRepresentativesCost against
//     the report's end-of-prefill representatives.
#include "infer/step_cost.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "common/fixed_math.h"
#include "golden/golden_texts.h"
#include "infer/decode_step.h"
#include "model/synth.h"
#include "mpc/compare/secure_backend.h"
#include "mpc/compare/select.h"
#include "net/mem_mesh.h"
#include "preproc/local_parties.h"

namespace mpcache::infer {
namespace {

// ---------------------------------------------------------------------------------------
// Kernels on shares.

enum class Op {
  kSoftmax,
  kRmsNorm,
  kRmsNormPending,
  kSilu,
  kArgMax,
  kRowMax,
  kRmsNormPublic,         // public gains (the model's public weights)
  kRmsNormPublicPending,  // the same, x with a pending truncation
};

struct Measured {
  KernelCost comm;    // the CommStats of party 0 (all parties send alike)
  KernelCost theory;  // SecureBackend::theory() (RowMax: its own backend, not reachable: = comm)
};

template <typename P>
Measured RunKernel(Op op, const FixedMathParams& p, std::size_t rows, std::size_t cols) {
  auto parties = preproc::LocalParties<P>::Create();
  EXPECT_TRUE(parties.ok());
  if (!parties.ok()) return {};
  auto out = (*parties)->Run([&](mpc::BinaryContext<P>& b) -> Result<Measured> {
    using Vec = typename mpc::SecureBackend<P>::Vec;
    b.arith().stats().Reset();
    mpc::SecureBackend<P> be(b);
    const std::size_t n = rows * cols;
    const mpc::Shares<P> zeros(n);
    const int f = p.frac_bits;
    switch (op) {
      case Op::kSoftmax: {
        const Vec x = be.Trunc(Vec(zeros), f + kScoreScaleBits);
        (void)be.Materialize(Softmax(be, p, x, rows, cols, kScoreCompareBits));
        break;
      }
      case Op::kRmsNorm:
      case Op::kRmsNormPending:
      case Op::kRmsNormPublic:
      case Op::kRmsNormPublicPending: {
        Vec x = Vec(zeros);
        if (op == Op::kRmsNormPending || op == Op::kRmsNormPublicPending) {
          x = be.Add(x, be.Trunc(Vec(zeros), f));
        }
        if (op == Op::kRmsNormPublic || op == Op::kRmsNormPublicPending) {
          const std::vector<Ring64> gains(cols, Ring64{1} << f);
          (void)be.Materialize(RmsNorm(be, p, x, std::span<const Ring64>(gains), rows, cols, 1e-5));
        } else {
          (void)be.Materialize(RmsNorm(be, p, x, Vec(mpc::Shares<P>(cols)), rows, cols, 1e-5));
        }
        break;
      }
      case Op::kSilu: {
        const Vec h13 = be.Trunc(Vec(mpc::Shares<P>(2 * n)), f);
        const Vec h1 = fixed_detail::Slice(be, h13, 0, n);
        const Vec h3 = fixed_detail::Slice(be, h13, n, n);
        (void)be.Materialize(SiluTimes(be, p, h1, h3));
        break;
      }
      case Op::kArgMax: {
        const auto am = RowArgMaxRank(be, Vec(zeros), 1, n, p.compare_bits,
                                      ArgMaxGroup(n, static_cast<std::size_t>(p.argmax_group),
                                                  static_cast<std::uint64_t>(p.argmax_round_cost)));
        (void)be.Materialize(am.one_hot);
        break;
      }
      case Op::kRowMax: {
        MPCACHE_ASSIGN_OR_RETURN(auto mx, mpc::RowMax<P>(b, zeros, rows, cols, p.compare_bits));
        (void)mx;
        break;
      }
    }
    MPCACHE_RETURN_IF_ERROR(be.status());
    const net::PhaseCounters t = b.arith().stats().Total();
    Measured m;
    m.comm = {t.rounds, t.bytes_sent};
    m.theory = op == Op::kRowMax ? m.comm : KernelCost{be.theory().rounds, be.theory().bytes_sent};
    return m;
  });
  for (const auto& r : out) EXPECT_TRUE(r.ok()) << r.error().ToString();
  if (!out[0].ok()) return {};
  for (const auto& r : out) {
    if (r.ok()) {
      EXPECT_EQ(r->comm, out[0]->comm) << "a party sent more than another";
    }
  }
  return *out[0];
}

Result<KernelCost> Predict(bool malicious, Op op, const FixedMathParams& p, std::size_t rows,
                           std::size_t cols) {
  switch (op) {
    case Op::kSoftmax:
      return SoftmaxKernelCost(malicious, p, rows, cols, p.frac_bits + kScoreScaleBits,
                               kScoreCompareBits);
    case Op::kRmsNorm:
      return RmsNormKernelCost(malicious, p, rows, cols, false);
    case Op::kRmsNormPending:
      return RmsNormKernelCost(malicious, p, rows, cols, true);
    case Op::kRmsNormPublic:
      return RmsNormKernelCost(malicious, p, rows, cols, false, true);
    case Op::kRmsNormPublicPending:
      return RmsNormKernelCost(malicious, p, rows, cols, true, true);
    case Op::kSilu:
      return SiluTimesKernelCost(malicious, p, rows * cols);
    case Op::kArgMax:
      return ArgMaxKernelCost(malicious, p, rows * cols);
    case Op::kRowMax:
      return RowMaxKernelCost(malicious, rows, cols, p.compare_bits);
  }
  return Internal("unknown op");
}

const char* Name(Op op) {
  constexpr const char* kNames[] = {
      "softmax", "rmsnorm", "rmsnorm(pending)",      "silu",
      "argmax",  "rowmax",  "rmsnorm(public gains)", "rmsnorm(public gains, pending)"};
  return kNames[static_cast<int>(op)];
}

struct KernelCase {
  Op op;
  std::size_t rows, cols;
  int frac_bits = kRecommendedFracBits;
  int group = 0;        // softmax_max_group / argmax_group (0: the default)
  int iterations = -1;  // the kernel's Newton steps (recip, rsqrt, sigmoid; -1: the default)
  int round_cost = -1;  // argmax_round_cost and silu_round_cost (-1: the defaults)
};

template <typename P>
void CheckKernels(const std::vector<KernelCase>& cases) {
  for (const KernelCase& c : cases) {
    FixedMathParams p;
    p.frac_bits = c.frac_bits;
    if (c.group > 0) p.softmax_max_group = p.argmax_group = c.group;
    if (c.round_cost >= 0) p.argmax_round_cost = p.silu_round_cost = c.round_cost;
    if (c.iterations >= 0) {
      p.recip_iterations = p.rsqrt_iterations = p.sigmoid_recip_iterations = c.iterations;
    }
    p.compare_bits = std::max(p.compare_bits, p.frac_bits + 8);
    p.rsqrt_log2_min = std::max(p.rsqrt_log2_min, 2 - p.frac_bits);
    if (p.frac_bits + p.exp_squarings > p.exp_frac_bits) {
      p.exp_frac_bits = 25;
      p.exp_squarings = std::min(p.exp_squarings, 25 - p.frac_bits);
    }
    p.exp_clip = std::min(p.exp_clip, 1 << p.exp_squarings);
    ASSERT_TRUE(p.Validate().ok()) << p.Validate().error().ToString();
    const auto want = Predict(P::kMalicious, c.op, p, c.rows, c.cols);
    ASSERT_TRUE(want.ok()) << want.error().ToString();
    const Measured m = RunKernel<P>(c.op, p, c.rows, c.cols);
    const std::string at = std::string(Name(c.op)) + " " + std::to_string(c.rows) + " x " +
                           std::to_string(c.cols) + " at f = " + std::to_string(c.frac_bits) +
                           " group " + std::to_string(c.group) + " iterations " +
                           std::to_string(c.iterations) +
                           (P::kMalicious ? " malicious" : " semi-honest");
    EXPECT_EQ(want->rounds, m.comm.rounds) << at;
    EXPECT_EQ(want->bytes, m.comm.bytes) << at;
    EXPECT_EQ(want->rounds, m.theory.rounds) << at << " (backend theory)";
    EXPECT_EQ(want->bytes, m.theory.bytes) << at << " (backend theory)";
    // The rounds are the protocols' own theory functions too.
    if (c.op == Op::kRowMax) {
      EXPECT_EQ(want->rounds, mpc::ArgMaxRounds(c.cols, p.compare_bits)) << at;
    }
    if (c.op == Op::kArgMax && p.compare_bits == 40) {
      const std::size_t n = c.rows * c.cols;
      EXPECT_EQ(want->rounds,
                ArgMaxRankCost(n, ArgMaxGroup(n, static_cast<std::size_t>(p.argmax_group),
                                              static_cast<std::uint64_t>(p.argmax_round_cost)))
                    .rounds)
          << at;
    }
  }
}

std::vector<KernelCase> KernelCases() {
  std::vector<KernelCase> out;
  // Softmax rows x columns: one ranking level (<= 24), two ending in pairs (25..48, with a
  // group of one at odd widths of the pair level), two full levels; f = 20 cannot take the
  // scores' truncation into the row max (a flush first).
  for (const std::size_t cols : {2, 3, 5, 11, 16, 17, 24, 25, 31, 48, 49, 97, 130}) {
    out.push_back({Op::kSoftmax, 4, cols});
  }
  out.push_back({Op::kSoftmax, 8, 33, 20});
  out.push_back({Op::kSoftmax, 2, 40, 14});
  // Groups of 2: pair levels, with a group of one at every odd width.
  for (const std::size_t cols : {5, 11, 12}) out.push_back({Op::kSoftmax, 3, cols, 18, 2});
  out.push_back({Op::kSoftmax, 2, 20, 22});
  // Other Newton step counts than the engine's.
  for (const int it : {0, 2, 3}) {
    out.push_back({Op::kSoftmax, 3, 9, 18, 0, it});
    out.push_back({Op::kRmsNorm, 1, 64, 18, 0, it});
    out.push_back({Op::kRmsNormPending, 2, 24, 18, 0, it});
    out.push_back({Op::kSilu, 1, 20, 18, 0, it});
  }
  out.push_back({Op::kSilu, 1, 20, 18, 0, 1});
  // RmsNorm: powers of two and not, both inputs.
  for (const std::size_t cols : {2, 3, 12, 48, 64, 96, 100, 128, 256}) {
    out.push_back({Op::kRmsNorm, 1, cols});
    out.push_back({Op::kRmsNormPending, 1, cols});
  }
  out.push_back({Op::kRmsNormPending, 3, 32});
  // Llama-2-7B's width: at f = 18 the norm's comparisons give up their headroom bit so that
  // the squares' truncations still ride them.
  out.push_back({Op::kRmsNorm, 1, 4096});
  out.push_back({Op::kRmsNormPending, 1, 4096});
  out.push_back({Op::kRmsNormPending, 1, 64, 12});
  out.push_back({Op::kRmsNorm, 1, 96, 22});
  // Public gains (the engine's norms with public weights): x squared alone, x g local.
  for (const std::size_t cols : {2, 3, 48, 64, 100, 4096}) {
    out.push_back({Op::kRmsNormPublic, 1, cols});
    out.push_back({Op::kRmsNormPublicPending, 1, cols});
  }
  out.push_back({Op::kRmsNormPublicPending, 3, 32});
  out.push_back({Op::kRmsNormPublicPending, 1, 64, 12});
  out.push_back({Op::kRmsNormPublicPending, 2, 24, 18, 0, 0});
  for (const std::size_t n : {1, 7, 64, 172, 300}) out.push_back({Op::kSilu, 1, n});
  out.push_back({Op::kSilu, 1, 50, 24});
  // SiLU's sign first, then the clip (SigmoidSignFirst: n > 3 silu_round_cost): either side of
  // the default's threshold (3 072), forced at small widths, every Newton step count, another f,
  // and never at cost 0.
  out.push_back({Op::kSilu, 1, 3072});
  out.push_back({Op::kSilu, 1, 3073});
  for (const std::size_t n : {4, 20, 300}) out.push_back({Op::kSilu, 1, n, 18, 0, -1, 1});
  for (const int it : {0, 1, 3}) out.push_back({Op::kSilu, 1, 20, 18, 0, it, 1});
  out.push_back({Op::kSilu, 1, 50, 24, 0, -1, 1});
  out.push_back({Op::kSilu, 1, 300, 18, 0, -1, 0});
  // Argmax: one level, levels of 8, a pair level.
  for (const std::size_t n : {2, 3, 8, 9, 40, 100, 512, 1000}) out.push_back({Op::kArgMax, 1, n});
  for (const std::size_t n : {3, 7, 13, 21, 64}) out.push_back({Op::kArgMax, 1, n, 18, 2});
  out.push_back({Op::kArgMax, 1, 77, 18, 3});
  // Priced rounds (a LAN): pairs with the one-hot top down for the wide rows.
  for (const std::size_t n : {9, 100, 1000}) out.push_back({Op::kArgMax, 1, n, 18, 8, -1, 32});
  for (const std::size_t cols : {2, 3, 4, 5, 8, 16, 17, 32}) out.push_back({Op::kRowMax, 6, cols});
  return out;
}

TEST(StepCostKernels, ClosedFormsEqualTheBackendMalicious) {
  CheckKernels<mpc::Spdz2k>(KernelCases());
}

TEST(StepCostKernels, ClosedFormsEqualTheBackendSemiHonest) {
  CheckKernels<mpc::SemiHonest>(KernelCases());
}

// ---------------------------------------------------------------------------------------
// Whole steps.

struct StepCase {
  std::string label;
  bool real_model = true;  // stories260K, else synthetic weights of `dims`
  std::string dims;
  int context = 8;
  bool malicious = true;
  std::optional<model::MpcachePolicy> policy;
  int frac_bits = kRecommendedFracBits;
};

constexpr const char* kSynthDims = "96x3x6x2x128x100x256";

model::MpcachePolicy Policy(int cluster, double keep) {
  model::MpcachePolicy p;
  p.cluster_tokens = cluster;
  p.keep_ratio = keep;
  return p;
}

std::vector<StepCase> StepCases() {
  std::vector<StepCase> out;
  out.push_back({"full, malicious", true, "", 10, true, std::nullopt});
  out.push_back({"full, semi-honest", true, "", 37, false, std::nullopt});
  out.push_back({"full, synthetic, malicious", false, kSynthDims, 9, true, std::nullopt});
  // MPCache with fewer than 3 clusters: no selection yet.
  out.push_back({"mpcache cs 8, C < 3", true, "", 12, true, Policy(8, 0.25)});
  // The step completes a cluster: (context + 1) % 8 == 0 (its representative is made at the
  // next step, not in this one).
  out.push_back({"mpcache cs 8, keep .5, completes a cluster", true, "", 47, true, Policy(8, 0.5)});
  out.push_back({"mpcache cs 16, keep .25, semi-honest", true, "", 100, false, Policy(16, 0.25)});
  {
    auto p = Policy(16, 0.4);
    p.level2_tokens = 4;
    p.level2_keep_ratio = 0.15;
    out.push_back({"mpcache cs 16 level 2 (4, .15)", true, "", 90, true, p});
  }
  {
    auto p = Policy(8, 0.3);
    p.share_layers = true;
    out.push_back({"mpcache share layers", true, "", 60, true, p});
  }
  {
    auto p = Policy(8, 0.3);
    p.share_layers = true;
    p.layer_share_decay = 0.9;
    p.representative = model::Representative::kMean;
    out.push_back({"mpcache share + decay .9, mean, semi-honest", true, "", 61, false, p});
  }
  {
    auto p = Policy(8, 0.25);
    p.residual = true;
    out.push_back({"mpcache residual", true, "", 55, true, p});
  }
  {
    auto p = Policy(8, 0.25);
    p.static_keep_ratio = 0.5;
    p.observation_window = 0.3;
    out.push_back({"mpcache static eviction .5", true, "", 40, true, p});
  }
  {
    auto p = Policy(32, 0.5);
    p.level2_tokens = 8;
    p.level2_keep_ratio = 0.2;
    p.residual = true;
    out.push_back({"mpcache cs 32 level 2, residual, synthetic", false, kSynthDims, 150, true, p});
  }
  {
    auto p = Policy(8, 0.25);
    p.reveal = config::Reveal::kPlain;
    out.push_back({"mpcache reveal plain", true, "", 50, true, p});
  }
  {
    auto p = Policy(8, 0.25);
    p.reveal = config::Reveal::kDp;
    p.level2_tokens = 4;
    p.level2_keep_ratio = 0.1;
    out.push_back({"mpcache reveal dp, level 2, semi-honest", true, "", 50, false, p});
  }
  {
    auto p = Policy(16, 0.3);
    p.share_layers = true;
    p.layer_share_decay = 0.95;
    out.push_back(
        {"mpcache share + decay, synthetic, semi-honest", false, kSynthDims, 120, false, p});
  }
  {
    auto p = Policy(8, 0.25);
    p.reveal = config::Reveal::kDp;
    p.share_layers = true;
    out.push_back({"mpcache reveal dp, share layers, synthetic", false, kSynthDims, 70, true, p});
  }
  out.push_back({"mpcache keep 1 (never selects)", true, "", 30, true, Policy(8, 1.0)});
  // Other fixed-point precisions: at f = 20 the scores' truncation by f + 14 cannot ride the
  // row max's 31-bit comparisons (a flush round first).
  out.push_back({"full, f = 20", false, kSynthDims, 20, true, std::nullopt, 20});
  out.push_back({"mpcache cs 8, f = 16, semi-honest", true, "", 33, false, Policy(8, 0.3), 16});
#if !defined(__SANITIZE_ADDRESS__)
  // The slowest runs (about 13 of the test's 19 s in a Release build), not repeated under the
  // sanitizers (the unit pass of scripts/test.sh): the same code paths as the smaller ones.
  // At the model's limit (seq_len 512).
  out.push_back({"full at the limit", true, "", 511, true, std::nullopt});
  {
    auto p = Policy(16, 0.25);
    p.level2_tokens = 4;
    p.level2_keep_ratio = 0.1;
    p.residual = true;
    out.push_back({"mpcache level 2, residual at the limit", true, "", 511, false, p});
  }
  // kv_dim 256: the representatives of 8 clusters go in two chunks of 4, and the pending
  // openings pass 2^22 after the second, so a MAC check runs before the end of the prefill.
  out.push_back({"synthetic kv 256, early representative check", false, "256x1x4x4x64x100x512", 300,
                 true, Policy(32, 0.25)});
#endif
  return out;
}

// stories260K.bin from MPCACHE_MODEL_DIR (ctest sets it); a failure, never a silent skip,
// when it is not there.
std::string ModelPath() {
  const std::string dir = golden::RequireModelDir();
  if (dir.empty()) return "";
  const std::string path = dir + "/stories260K.bin";
  if (!std::filesystem::exists(path)) {
    ADD_FAILURE() << path << " does not exist: MPCACHE_MODEL_DIR must hold stories260K.bin";
    return "";
  }
  return path;
}

TEST(StepCost, PredictionEqualsTheMeasuredStepPhaseByPhase) {
  const std::string model = ModelPath();
  if (model.empty()) return;  // the failure is recorded
  for (const StepCase& c : StepCases()) {
    SCOPED_TRACE(c.label + " (context " + std::to_string(c.context) + ")");
    DecodeStepOptions o;
    if (c.real_model) {
      o.model = model;
    } else {
      o.dims = c.dims;
    }
    o.context = c.context;
    o.policy = c.policy;
    o.malicious = c.malicious;
    o.threads = 1;
    o.frac_bits = c.frac_bits;
    const auto rep = RunDecodeStep(o);
    ASSERT_TRUE(rep.ok()) << rep.error().ToString();
    StepCostQuery q;
    q.config = rep->config;
    q.malicious = c.malicious;
    q.policy = c.policy;
    q.context = c.context;
    q.math.frac_bits = c.frac_bits;
    const auto got = PredictStepCost(q);
    ASSERT_TRUE(got.ok()) << got.error().ToString();
    for (const auto& [name, pc] : rep->phases) {
      const auto it = got->find(name);
      ASSERT_NE(it, got->end()) << "phase " << name << " is not predicted";
      EXPECT_EQ(it->second.bytes, pc.bytes_sent) << name;
      EXPECT_EQ(it->second.rounds, pc.rounds) << name;
    }
    for (const auto& [name, pc] : *got) {
      EXPECT_TRUE(rep->phases.contains(name)) << "phase " << name << " is not measured";
    }
    if (c.policy) {
      ASSERT_TRUE(rep->representatives.has_value());
      const auto reps = PredictRepresentativesCost(q);
      ASSERT_TRUE(reps.ok()) << reps.error().ToString();
      const auto clusters = static_cast<std::uint64_t>(rep->representatives->clusters);
      EXPECT_EQ(reps->bytes / clusters, rep->representatives->bytes_per_party_per_cluster)
          << "representatives";
      EXPECT_EQ(reps->rounds, rep->representatives->rounds) << "representatives";
    }
  }
}

TEST(StepCost, BadQueriesAreRefusedClearly) {
  auto config = model::ParseDims("64x2x4x2x128x100x64");
  ASSERT_TRUE(config.ok());
  StepCostQuery q;
  q.config = *config;
  q.context = 64;  // + 1 > seq_len
  auto r = PredictStepCost(q);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("at most 63"), std::string::npos) << r.error().message();
  q.context = 0;
  EXPECT_FALSE(PredictStepCost(q).ok());
  q.context = 10;
  q.policy = Policy(0, 0.5);
  r = PredictStepCost(q);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("cluster"), std::string::npos) << r.error().message();
  q.policy.reset();
  q.math.frac_bits = 30;
  EXPECT_FALSE(PredictStepCost(q).ok()) << "invalid kernel parameters";
  q.math = FixedMathParams{};
  EXPECT_FALSE(PredictRepresentativesCost(q).ok()) << "the full cache has no representatives";
  q.config.n_heads = 5;  // does not divide dim
  EXPECT_FALSE(PredictStepCost(q).ok());
}

TEST(DecodeStep, AMeshOfTheWrongSizeIsRefusedBeforeAnyWork) {
  // Two channels for three parties: refused by name before a model is read or a dealer made
  // (the model named here does not exist, so a later check would fail on that instead).
  auto mesh = net::MemMesh::Create(2);
  ASSERT_TRUE(mesh.ok());
  DecodeStepOptions o;
  o.model = "/nonexistent/stories260K.bin";
  o.channels = {&(*mesh)->party(0), &(*mesh)->party(1)};
  const auto rep = RunDecodeStep(o);
  ASSERT_FALSE(rep.ok());
  EXPECT_EQ(rep.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(rep.error().ToString().find("2 channels given; one per party (3)"), std::string::npos)
      << rep.error().ToString();
}

}  // namespace
}  // namespace mpcache::infer
