// `mpcache-bench ops --op mul|matmul|trunc --n N --security malicious|semi-honest
//  [--threads T] [--seed S] [--frac-bits F] --json`
//
// Three parties in one process over the in-memory mesh, with the in-process dealer.
// Phases, each measured on its own:
//   setup   — input sharing of the operands (and, for matmul, masking the fixed N x N
//             operand once: D = W - A is opened and checked); not part of the figures;
//   offline — the dealer makes the op's preprocessing and the parties expand it
//             (offline_seconds, dealer_bytes_*; per run when --repeat > 1);
//   online  — the op itself plus the MAC check of everything it opened (seconds, bytes,
//             rounds; mac_check_seconds is the check's share of it).
// The result is then revealed (after a MAC check) and compared with the plaintext twin:
// mul exact in Z_2^64; trunc vs the exact arithmetic shift, in units of 2^-f; matmul
// (1 x N . N x N, fixed point with f fractional bits) exact, in units of 2^-2f.
#include <algorithm>
#include <barrier>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <ctime>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/prg.h"
#include "mpc/beaver.h"
#include "mpc/io.h"
#include "mpc/matmul.h"
#include "mpc/trunc.h"
#include "preproc/local_parties.h"
#include "tools/bench/commands.h"
#include "tools/bench/compare_ops.h"

namespace mpcache::tools {
namespace {

using mpc::Context;
using mpc::Shares;
using preproc::BatchRequest;
using preproc::ItemType;
using Vec = std::vector<std::uint64_t>;

constexpr const char* kValidOps =
    "mul, matmul, trunc, lt, max, argmax, topk, topk-rank, exp, recip, rsqrt, silu, softmax, "
    "rmsnorm";

struct OpsOptions {
  std::string op;
  std::size_t n = 0;
  std::string security = "malicious";
  int threads = 1;
  std::optional<std::uint64_t> seed;
  int frac_bits = 16;
  int repeat = 1;
  bool json = false;
  int bits = 0;                     // comparison width (comparison ops); 0 = the kernels' default
  int rank_round_cost = -1;         // FixedMathParams::rank_round_cost; -1 = the kernels' default
  std::string open = "all-to-all";  // mpc::OpenStyle by name
};

double Since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// CPU time of the calling thread: unlike wall time, not inflated by other processes
// sharing the cores.
double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

struct Run {
  double online_seconds = 0;
  double mac_seconds = 0;
  double online_cpu_seconds = 0;  // this party's thread (worker threads not included)
};

struct PartyReport {
  std::vector<Run> runs;
  double setup_seconds = 0;
  net::PhaseCounters online;  // of the last run (every run costs the same)
  Vec output;
};

template <typename P>
Result<Shares<P>> ShareFrom0(Context<P>& ctx, const Vec& x) {
  // Large inputs go in slices of 1M values so the dealer's input masks stay small.
  constexpr std::size_t kSlice = std::size_t{1} << 20;
  Shares<P> out;
  out.v.reserve(x.size());
  if constexpr (P::kMalicious) out.m.reserve(x.size());
  for (std::size_t off = 0; off < x.size(); off += kSlice) {
    const std::size_t len = std::min(kSlice, x.size() - off);
    std::span<const std::uint64_t> mine;
    if (ctx.self() == 0) mine = std::span<const std::uint64_t>(x).subspan(off, len);
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> s, mpc::Input<P>(ctx, 0, mine, len));
    out.Append(s);
  }
  return out;
}

template <typename P>
Result<nlohmann::json> RunOps(const OpsOptions& o) {
  Seed master{};
  if (o.seed) {
    master = TestSeed(*o.seed);
  } else {
    MPCACHE_ASSIGN_OR_RETURN(master, OsSeed());
  }
  const std::size_t n = o.n;
  const int f = o.frac_bits;
  Prg data(DeriveSeed(master, 0xDA7Aull));
  auto fixed = [&](double lo, double hi) {
    const double r = lo + (hi - lo) * data.NextDouble();
    return static_cast<std::uint64_t>(static_cast<std::int64_t>(std::llround(std::ldexp(r, f))));
  };
  // Plaintext operands and the twin's expected output.
  Vec x, y;
  Vec want;
  double unit = 1.0;  // one ring unit of the output, as a real number
  if (o.op == "mul") {
    x.resize(n);
    y.resize(n);
    for (auto& v : x) v = data.NextU64();
    for (auto& v : y) v = data.NextU64();
    want.resize(n);
    for (std::size_t i = 0; i < n; ++i) want[i] = x[i] * y[i];
  } else if (o.op == "trunc") {
    // Products of two fixed-point numbers (scale 2^2f), |x| < 2^47, truncated by f.
    x.resize(n);
    for (auto& v : x) {
      const std::uint64_t mag = data.NextU64() >> 17;
      v = data.NextU64() & 1 ? mag : 0 - mag;
    }
    want.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      want[i] = static_cast<std::uint64_t>(static_cast<std::int64_t>(x[i]) >> f);
    }
    unit = std::ldexp(1.0, -f);
  } else {  // matmul: x (1 x n) . W (n x n), reals in [-1, 1]
    x.resize(n);
    y.resize(n * n);
    for (auto& v : x) v = fixed(-1, 1);
    for (auto& v : y) v = fixed(-1, 1);
    want.assign(n, 0);
    for (std::size_t t = 0; t < n; ++t) {
      for (std::size_t j = 0; j < n; ++j) want[j] += x[t] * y[t * n + j];
    }
    unit = std::ldexp(1.0, -2 * f);
  }

  preproc::LocalPartiesOptions lo;
  lo.dealer_seed = master;
  lo.bit_seed = DeriveSeed(master, 0xB175);
  lo.local_seed = DeriveSeed(master, 0x5E1F);
  lo.threads = o.threads;
  MPCACHE_ASSIGN_OR_RETURN(lo.open_style, mpc::ParseOpenStyle(o.open));
  MPCACHE_ASSIGN_OR_RETURN(auto parties, preproc::LocalParties<P>::Create(lo));
  preproc::InProcessDealer<P>* dealer = &parties->dealer();
  std::barrier sync(3);
  preproc::OfflineStats off_before, off_after;
  double offline_seconds = 0;
  std::uint64_t fixed_mask_id = 0;
  Status offline_status = Status::Ok();

  auto results = parties->RunArith([&](Context<P>& party) -> Result<PartyReport> {
    PartyReport rep;
    const auto t_setup = std::chrono::steady_clock::now();
    Context<P>* ctx = &party;
    // ---- setup ----
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> sx, ShareFrom0(*ctx, x));
    Shares<P> sy;
    std::optional<mpc::FixedOperand<P>> fw;
    if (o.op == "mul") {
      MPCACHE_ASSIGN_OR_RETURN(sy, ShareFrom0(*ctx, y));
    } else if (o.op == "matmul") {
      MPCACHE_ASSIGN_OR_RETURN(Shares<P> sw, ShareFrom0(*ctx, y));
      MPCACHE_ASSIGN_OR_RETURN(auto masked, mpc::MaskFixed(*ctx, std::move(sw), n, n));
      fw.emplace(std::move(masked));
      if (party.self() == 0) fixed_mask_id = fw->mask_id;
    }
    MPCACHE_RETURN_IF_ERROR(ctx->CheckMacs());
    rep.setup_seconds = Since(t_setup);

    // ---- offline: a thread of party 0 runs the dealer while the others wait ----
    sync.arrive_and_wait();
    // On a thread of its own (its own heap arena), as the dealer is a process of its own:
    // tools/bench/compare_ops.cc says what party 0's thread paid when it made the material.
    if (party.self() == 0) {
      std::thread offline([&] {
        off_before = dealer->stats();
        const auto t0 = std::chrono::steady_clock::now();
        std::vector<BatchRequest> reqs;
        if (o.op == "mul") reqs.push_back({.type = ItemType::kTriple, .count = n});
        if (o.op == "trunc") reqs.push_back({.type = ItemType::kTrunc, .count = n, .frac_bits = f});
        if (o.op == "matmul") {
          reqs.push_back({.type = ItemType::kMatrixTriple,
                          .mask_id = fixed_mask_id,
                          .side = mpc::MaskSide::kRight,
                          .other = 1});
        }
        if (P::kMalicious) reqs.push_back({.type = ItemType::kRandom, .count = 1});
        for (int rep_i = 0; rep_i < o.repeat && offline_status.ok(); ++rep_i) {
          for (const auto& r : reqs) {
            offline_status = dealer->Provide(r);
            if (!offline_status.ok()) break;
          }
        }
        offline_seconds = Since(t0);
        off_after = dealer->stats();
      });
      offline.join();
    }
    sync.arrive_and_wait();
    MPCACHE_RETURN_IF_ERROR(offline_status);

    // ---- online (repeated: the first run pays first-touch page faults, later ones show the
    // steady state of a long-running party; the figures are those of the median run) ----
    Shares<P> z;
    for (int rep_i = 0; rep_i < o.repeat; ++rep_i) {
      sync.arrive_and_wait();
      ctx->stats().Reset();
      const auto t_online = std::chrono::steady_clock::now();
      const double cpu0 = ThreadCpuSeconds();
      {
        net::PhaseScope phase(ctx->stats(), o.op);
        if (o.op == "mul") {
          MPCACHE_ASSIGN_OR_RETURN(z, mpc::Mul(*ctx, sx, sy));
        } else if (o.op == "trunc") {
          MPCACHE_ASSIGN_OR_RETURN(z, mpc::Trunc(*ctx, sx, f));
        } else {
          MPCACHE_ASSIGN_OR_RETURN(z, mpc::MatMul(*ctx, sx, 1, *fw));
        }
      }
      const auto t_mac = std::chrono::steady_clock::now();
      {
        net::PhaseScope phase(ctx->stats(), "mac_check");
        MPCACHE_RETURN_IF_ERROR(ctx->CheckMacs());
      }
      rep.runs.push_back({Since(t_online), Since(t_mac), ThreadCpuSeconds() - cpu0});
      rep.online = ctx->stats().Total();
    }

    // ---- reveal for the accuracy check (not timed) ----
    MPCACHE_ASSIGN_OR_RETURN(Vec out, ctx->Open(z));
    MPCACHE_RETURN_IF_ERROR(ctx->CheckMacs());
    if (party.self() == 0) rep.output = std::move(out);
    return rep;
  });
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (!results[i].ok()) return results[i].error().WithContext("party " + std::to_string(i));
  }

  // Per run: the slowest party; then the median run.
  std::vector<Run> per_run(static_cast<std::size_t>(o.repeat));
  double setup_seconds = 0;
  std::uint64_t bytes = 0;
  nlohmann::json bytes_list = nlohmann::json::array(), dealer_list = nlohmann::json::array();
  nlohmann::json cpu_list = nlohmann::json::array();
  for (std::size_t i = 0; i < results.size(); ++i) {
    const PartyReport& r = *results[i];
    for (std::size_t k = 0; k < per_run.size(); ++k) {
      per_run[k].online_seconds = std::max(per_run[k].online_seconds, r.runs[k].online_seconds);
      per_run[k].mac_seconds = std::max(per_run[k].mac_seconds, r.runs[k].mac_seconds);
    }
    setup_seconds = std::max(setup_seconds, r.setup_seconds);
    bytes = std::max(bytes, r.online.bytes_sent);
    bytes_list.push_back(r.online.bytes_sent);
  }
  std::vector<double> run_seconds(per_run.size());
  for (std::size_t k = 0; k < per_run.size(); ++k) run_seconds[k] = per_run[k].online_seconds;
  const std::size_t median = MedianRun(run_seconds);
  const double seconds = per_run[median].online_seconds;
  const double mac_seconds = per_run[median].mac_seconds;
  for (const auto& r : results) cpu_list.push_back(r->runs[median].online_cpu_seconds);
  std::uint64_t dealer_max = 0;
  for (std::size_t i = 0; i < off_after.bytes_to_party.size(); ++i) {
    // Per run: the offline phase made `repeat` runs' worth of preprocessing.
    const std::uint64_t b = (off_after.bytes_to_party[i] - off_before.bytes_to_party[i]) /
                            static_cast<std::uint64_t>(o.repeat);
    dealer_list.push_back(b);
    dealer_max = std::max(dealer_max, b);
  }
  const Vec& got = results[0]->output;
  double max_err = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double d = std::fabs(static_cast<double>(static_cast<std::int64_t>(got[i] - want[i])));
    max_err = std::max(max_err, d * unit);
  }
  nlohmann::json j;
  j["op"] = o.op;
  j["n"] = n;
  j["security"] = o.security;
  j["seconds"] = seconds;
  j["offline_seconds"] = offline_seconds / o.repeat;
  j["bytes_per_party"] = bytes;
  j["rounds"] = results[0]->online.rounds;
  j["max_abs_error"] = max_err;
  j["dealer_bytes_per_party"] = dealer_max;
  j["dealer_bytes_by_party"] = dealer_list;
  j["bytes_by_party"] = bytes_list;
  j["mac_check_seconds"] = mac_seconds;
  j["online_cpu_seconds_by_party"] = cpu_list;
  j["repeat"] = o.repeat;
  j["seconds_by_run"] = run_seconds;
  j["setup_seconds"] = setup_seconds;
  j["offline_dealer_seconds"] = (off_after.dealer_seconds - off_before.dealer_seconds) / o.repeat;
  j["offline_expand_seconds"] = (off_after.expand_seconds - off_before.expand_seconds) / o.repeat;
  j["threads"] = o.threads;
  j["open"] = o.open;
  j["frac_bits"] = f;
  j["ops_per_second"] = seconds > 0 ? static_cast<double>(o.op == "matmul" ? 1 : n) / seconds : 0;
  if (o.seed) j["seed"] = *o.seed;
  return j;
}

int RunOpsCommand(const OpsOptions& o) {
  if (o.repeat < 1 || o.repeat > 100) {  // every op's
    std::cerr << "error: --repeat must be in 1..100\n";
    return 2;
  }
  if (IsCompareOp(o.op)) {  // comparison and nonlinear ops: tools/bench/compare_ops.h
    return RunCompareOps({.op = o.op,
                          .n = o.n,
                          .security = o.security,
                          .seed = o.seed,
                          .threads = o.threads,
                          .json = o.json,
                          .bits = o.bits,
                          .rank_round_cost = o.rank_round_cost,
                          .open = o.open,
                          .repeat = o.repeat});
  }
  if (o.op != "mul" && o.op != "matmul" && o.op != "trunc") {
    std::cerr << "error: unknown op '" << o.op << "'; valid ops: " << kValidOps << "\n";
    return 2;
  }
  if (o.n == 0) {
    std::cerr << "error: --n must be at least 1\n";
    return 2;
  }
  if (o.op == "matmul" && o.n > 16384) {
    std::cerr << "error: --n " << o.n << " is too large for matmul (1 x N . N x N); use <= 16384\n";
    return 2;
  }
  if (o.threads < 1 || o.threads > 256) {
    std::cerr << "error: --threads must be in 1..256\n";
    return 2;
  }
  if (o.frac_bits < 1 || o.frac_bits > 30) {
    std::cerr << "error: --frac-bits must be in 1..30\n";
    return 2;
  }
  Result<nlohmann::json> r =
      o.security == "malicious" ? RunOps<mpc::Spdz2k>(o) : RunOps<mpc::SemiHonest>(o);
  if (const int rc = EmitJsonOrError(r, o.json); rc >= 0) return rc;
  const nlohmann::json& j = *r;
  std::cout << o.op << " n=" << o.n << " (" << o.security << "): online "
            << j["seconds"].get<double>() << " s, " << j["bytes_per_party"].get<std::uint64_t>()
            << " bytes/party, " << j["rounds"].get<std::uint64_t>() << " rounds, max error "
            << j["max_abs_error"].get<double>() << "; offline "
            << j["offline_seconds"].get<double>() << " s, dealer "
            << j["dealer_bytes_per_party"].get<std::uint64_t>() << " bytes to the busiest party\n";
  return 0;
}

}  // namespace

void AddOpsCommand(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<OpsOptions>();
  CLI::App* cmd = app.add_subcommand(
      "ops", "Benchmark one MPC operation: three parties in one process (in-memory mesh)");
  cmd->add_option("--op", opts->op, std::string("Operation: ") + kValidOps)->required();
  cmd->add_option("--n", opts->n, "Size: number of products/truncations; for matmul 1xN . NxN")
      ->required();
  cmd->add_option("--security", opts->security, "malicious (SPDZ2k) or semi-honest")
      ->check(CLI::IsMember({"malicious", "semi-honest"}));
  cmd->add_option("--threads", opts->threads, "Worker threads per party for local kernels");
  cmd->add_option("--seed", opts->seed, "Deterministic run (test seed); default: OS randomness");
  cmd->add_option("--frac-bits", opts->frac_bits, "Fixed-point fractional bits (trunc, matmul)");
  cmd->add_option("--bits", opts->bits,
                  "Comparison width for lt/max/argmax/topk and the kernels (exact while "
                  "|x| < 2^(bits-1)); default: the kernels' compare_bits (40)");
  cmd->add_option("--rank-round-cost", opts->rank_round_cost,
                  "What one round of a row max / top-k ranking is worth in comparisons (softmax, "
                  "max, topk-rank); default: the kernels' rank_round_cost (4096, priced for the "
                  "TLS daemons)");
  cmd->add_option("--open", opts->open,
                  "How values are opened: all-to-all (1 round each) or split-king (2 rounds, a "
                  "third fewer bytes)")
      ->check(CLI::IsMember({"all-to-all", "split-king"}))
      ->capture_default_str();
  cmd->add_option("--repeat", opts->repeat,
                  "Run the online phase R times (fresh preprocessing each); report the median");
  cmd->add_flag("--json", opts->json, "Print one JSON object on stdout");
  cmd->callback([opts, exit_code] { *exit_code = RunOpsCommand(*opts); });
}

}  // namespace mpcache::tools
