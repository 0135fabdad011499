// `mpcache-bench weights --model F [--security S] [--threads T] [--parties N] [--repeat R]
//  [--json]`
//
// The local public-weight products of one forward pass against this machine's memory
// bandwidth. A compact GGUF (Q8_0/F16, model/compact_model.h) is mapped as the parties map
// it; every layer's matrices and the classifier are multiplied with random share vectors
// (malicious: 128-bit value and MAC shares in one pass; semi-honest: 64-bit shares), and the
// secret one-hot embedding lookup runs once, exactly the kernels the secure engine calls
// (model/compact_kernels.h). Reported:
//   memory_read_gb_per_s    a streaming read of a buffer larger than the caches (--buffer-mib)
//                           on 1 .. T threads: the ceiling;
//   party                   one party alone with T worker threads: seconds per pass, weight
//                           GB/s, and its ratio to the memory read on T threads;
//   parties                 N parties at once (threads of this process, T workers each, as
//                           `generate` runs them): aggregate weight GB/s and its ratio.
// The first pass warms the page cache (not counted); the best of --repeat passes is kept.
#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "common/prg.h"
#include "model/compact_kernels.h"
#include "tools/bench/commands.h"

namespace mpcache::tools {
namespace {

using model::u128;

struct WeightsOptions {
  std::string model;
  std::string security = "malicious";
  int threads = 1;
  int parties = 3;
  int repeat = 2;
  int buffer_mib = 1024;
  bool json = false;
};

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// GB/s of summing `words` 64-bit words on `threads` threads (best of 3).
double ReadBandwidth(const std::vector<std::uint64_t>& buf, int threads) {
  double best = 0;
  std::vector<std::uint64_t> sums(static_cast<std::size_t>(threads), 0);
  for (int rep = 0; rep < 3; ++rep) {
    const auto part = [&](int t) {
      const std::size_t b = buf.size() * static_cast<std::size_t>(t) / threads,
                        e = buf.size() * static_cast<std::size_t>(t + 1) / threads;
      const std::uint64_t* p = buf.data();
      std::uint64_t a = 0, c = 0, d = 0, f = 0;
      for (std::size_t i = b; i + 4 <= e; i += 4) {
        a += p[i];
        c += p[i + 1];
        d += p[i + 2];
        f += p[i + 3];
      }
      sums[static_cast<std::size_t>(t)] += a + c + d + f;
    };
    const double t0 = Now();
    std::vector<std::thread> workers;
    for (int t = 1; t < threads; ++t) workers.emplace_back(part, t);
    part(0);
    for (auto& w : workers) w.join();
    const double s = Now() - t0;
    best = std::max(best, static_cast<double>(buf.size() * 8) / s / 1e9);
  }
  volatile std::uint64_t keep = 0;  // the sums are used: the reads cannot be dropped
  for (std::uint64_t s : sums) keep = keep + s;
  return best;
}

// One party's pass: every layer's matrices and the classifier times share vectors, then the
// embedding lookup. Returns {matrix seconds, embedding seconds}.
struct Pass {
  double matrices = 0, embedding = 0;
};

Pass PartyPass(const model::CompactModel& m, bool malicious, int threads, std::uint64_t seed) {
  const model::ModelConfig& c = m.config;
  const std::size_t wide =
      static_cast<std::size_t>(std::max({c.dim, c.hidden_dim, c.vocab_size, c.kv_dim()}));
  Prg prg(TestSeed(seed));
  std::vector<u128> xa(wide), xb(wide), ya(wide), yb(wide);
  std::vector<std::uint64_t> x(wide), y(wide);
  for (std::size_t i = 0; i < wide; ++i) {
    x[i] = prg.NextU64();
    xa[i] = (static_cast<u128>(prg.NextU64()) << 64) | prg.NextU64();
    xb[i] = (static_cast<u128>(prg.NextU64()) << 64) | prg.NextU64();
  }
  const model::KernelOptions o{threads};
  const auto mv = [&](const model::CompactMatrix& w) {
    if (malicious) {
      model::CompactMatVec2(w, xa.data(), xb.data(), ya.data(), yb.data(), o);
    } else {
      model::CompactMatVec(w, x.data(), y.data(), o);
    }
  };
  Pass p;
  const double t0 = Now();
  for (const model::CompactLayer& l : m.layers) {
    for (const model::CompactMatrix* w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w1, &l.w3, &l.w2}) mv(*w);
  }
  mv(m.classifier());
  const double t1 = Now();
  if (malicious) {
    model::CompactVecMat2(m.embedding, xa.data(), xb.data(), ya.data(), yb.data(), o);
  } else {
    model::CompactVecMat(m.embedding, x.data(), y.data(), o);
  }
  p.matrices = t1 - t0;
  p.embedding = Now() - t1;
  return p;
}

Result<nlohmann::json> RunWeights(const WeightsOptions& o) {
  MPCACHE_ASSIGN_OR_RETURN(std::shared_ptr<const model::CompactModel> m,
                           model::CompactModel::Open(o.model));
  const bool malicious = o.security == "malicious";
  const double bytes = static_cast<double>(m->LayerMatrixBytes());
  nlohmann::json j;
  j["model"] = o.model;
  j["config"] = m->config.Describe();
  j["weight_type"] = m->weight_type;
  j["security"] = o.security;
  j["threads"] = o.threads;
  j["parties"] = o.parties;
  j["vectorised"] = model::CompactKernelsVectorised() && model::MatVecVectorised(m->layers[0].wq);
  j["weight_bytes_per_pass"] = m->LayerMatrixBytes();
  j["embedding_bytes"] = m->embedding.bytes();
  {
    std::vector<std::uint64_t> buf(static_cast<std::size_t>(o.buffer_mib) << 17);
    for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = i;
    nlohmann::json bw = nlohmann::json::object();
    for (int t = 1; t <= std::max(o.threads, o.parties); ++t) {
      bw[std::to_string(t)] = ReadBandwidth(buf, t);
    }
    j["memory_read_gb_per_s"] = bw;
    j["memory_buffer_mib"] = o.buffer_mib;
  }
  const auto memory = [&](int threads) {
    const auto& bw = j["memory_read_gb_per_s"];
    const std::string key = std::to_string(std::min(threads, static_cast<int>(bw.size())));
    return bw[key].get<double>();
  };
  PartyPass(*m, malicious, o.threads, 1);  // warm the page cache
  Pass best{1e300, 1e300};
  for (int r = 0; r < o.repeat; ++r) {
    const Pass p = PartyPass(*m, malicious, o.threads, 2 + static_cast<std::uint64_t>(r));
    best.matrices = std::min(best.matrices, p.matrices);
    best.embedding = std::min(best.embedding, p.embedding);
  }
  const double party_gbs = bytes / best.matrices / 1e9;
  j["party"] = {
      {"seconds_per_pass", best.matrices},
      {"weight_gb_per_s", party_gbs},
      {"ratio_to_memory_read", party_gbs / memory(o.threads)},
      {"embedding_seconds", best.embedding},
      {"embedding_gb_per_s", static_cast<double>(m->embedding.bytes()) / best.embedding / 1e9}};
  double best_wall = 1e300;
  for (int r = 0; r < o.repeat; ++r) {
    const double t0 = Now();
    std::vector<std::thread> ts;
    ts.reserve(static_cast<std::size_t>(o.parties));
    for (int p = 0; p < o.parties; ++p) {
      ts.emplace_back(
          [&, p] { PartyPass(*m, malicious, o.threads, 100 + static_cast<std::uint64_t>(p)); });
    }
    for (auto& t : ts) t.join();
    best_wall = std::min(best_wall, Now() - t0);
  }
  const double all_bytes =
      (bytes + static_cast<double>(m->embedding.bytes())) * static_cast<double>(o.parties);
  const double agg = all_bytes / best_wall / 1e9;
  j["parties_at_once"] = {
      {"seconds_per_pass", best_wall},
      {"aggregate_weight_gb_per_s", agg},
      {"ratio_to_memory_read", agg / memory(o.parties * o.threads)},
      {"note", "each party streams every weight once per token (layers, classifier, embedding)"}};
  return j;
}

int RunWeightsCommand(const WeightsOptions& o) {
  Result<nlohmann::json> j = RunWeights(o);
  if (const int rc = EmitJsonOrError(j, o.json); rc >= 0) return rc;
  const auto& r = *j;
  std::cout << "weights: " << r["config"].get<std::string>() << ", "
            << r["weight_type"].get<std::string>() << ", "
            << r["weight_bytes_per_pass"].get<std::uint64_t>() / 1e9 << " GB of matrices per pass, "
            << o.security << ", " << o.threads << " thread(s)\n";
  for (const auto& [t, gbs] : r["memory_read_gb_per_s"].items()) {
    std::cout << "  memory read, " << t << " thread(s): " << gbs.get<double>() << " GB/s\n";
  }
  std::cout << "  one party: " << r["party"]["seconds_per_pass"].get<double>() << " s per pass, "
            << r["party"]["weight_gb_per_s"].get<double>() << " GB/s of weights ("
            << 100 * r["party"]["ratio_to_memory_read"].get<double>()
            << "% of the memory read); embedding " << r["party"]["embedding_seconds"].get<double>()
            << " s\n";
  std::cout << "  " << o.parties
            << " parties at once: " << r["parties_at_once"]["seconds_per_pass"].get<double>()
            << " s, " << r["parties_at_once"]["aggregate_weight_gb_per_s"].get<double>()
            << " GB/s (" << 100 * r["parties_at_once"]["ratio_to_memory_read"].get<double>()
            << "%)\n";
  return 0;
}

}  // namespace

void AddWeightsCommand(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<WeightsOptions>();
  CLI::App* cmd = app.add_subcommand(
      "weights",
      "Local public-weight products of one forward pass (compact GGUF) against the machine's "
      "memory bandwidth: GB/s of weights streamed and the ratio");
  cmd->add_option("--model", opts->model, "A GGUF with Q8_0 or F16 matrices")->required();
  cmd->add_option("--security", opts->security, "malicious (values + MACs) or semi-honest")
      ->check(CLI::IsMember({"malicious", "semi-honest"}))
      ->capture_default_str();
  cmd->add_option("--threads", opts->threads, "Worker threads per party")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  cmd->add_option("--parties", opts->parties, "Parties at once for the aggregate figure")
      ->check(CLI::Range(1, 8))
      ->capture_default_str();
  cmd->add_option("--repeat", opts->repeat, "Timed passes (the best is kept)")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  cmd->add_option("--buffer-mib", opts->buffer_mib, "Buffer of the memory read test")
      ->check(CLI::Range(64, 16384))
      ->capture_default_str();
  cmd->add_flag("--json", opts->json, "Print one JSON object on stdout");
  cmd->callback([opts, exit_code] { *exit_code = RunWeightsCommand(*opts); });
}

}  // namespace mpcache::tools
