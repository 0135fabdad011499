// `mpcache-bench generate --model M --tokenizer T --prompt P --steps N
//  --security malicious|semi-honest --weights public|private [--cache full|mpcache] [--json]`
//
// A whole private generation (greedy, or sampled with --temperature/--top-p/--top-k and the
// client's noise from --seed: common/fixed_sampling.h) with three parties in one process over the
// in-memory mesh, the in-process dealers feeding them on demand and a simulated client (infer/
// in_process.h). Per-token figures are over the decoded positions (the prefill of the
// prompt's tokens is reported apart): wall seconds, bytes sent per party, rounds, and the
// per-phase breakdown (embedding, norms, projections, attention, softmax, ffn,
// classifier_argmax, mac_check). The dealer runs on demand inside the loop; its own time
// and traffic are reported as the offline figures. With --rtt-ms (and --link-mbit), the
// per-token time between sites is estimated from the measured rounds and bytes
// (tools/bench/link_estimate.h).
#include <sys/resource.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/config.h"
#include "common/fixed_backend.h"
#include "infer/in_process.h"
#include "infer/ring_model.h"
#include "model/checkpoint.h"
#include "model/tokenizer.h"
#include "mpc/context.h"
#include "tools/bench/commands.h"
#include "tools/bench/link_estimate.h"
#include "tools/common/sampling_flags.h"

namespace mpcache::tools {
namespace {

// This process's peak resident set (getrusage: kB).
std::uint64_t PeakRssBytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<std::uint64_t>(u.ru_maxrss) * 1024;
}

struct GenerateOptions {
  std::string model, tokenizer, prompt;
  int steps = 64;
  std::string security = "malicious";
  std::string weights = "public";
  CacheFlags cache;
  SamplingFlags sampling;
  int threads = 1;
  std::string open = "all-to-all";  // mpc::OpenStyle
  std::uint64_t seed = 1;
  int frac_bits = kRecommendedFracBits;
  // The kernels' round prices (a party YAML's `kernels:` section; FixedMathParams).
  config::KernelPrices kernels;
  std::string shares;  // private weights from share files
  bool offline_first = false;
  bool json = false;
  std::optional<double> rtt_ms;  // estimate the per-token time at this round-trip time
  double link_mbit = 0;          // ... and this uplink rate per party (0: unlimited)
};

template <typename P>
Result<nlohmann::json> RunGenerate(const GenerateOptions& o) {
  std::shared_ptr<const infer::RingModel> ring;
  if (o.weights == "private") {
    // Private weights are split from (or checked against) the wide encoding.
    MPCACHE_ASSIGN_OR_RETURN(model::ModelWeights w, model::LoadCheckpoint(o.model));
    MPCACHE_ASSIGN_OR_RETURN(ring, infer::EncodeModel(w, o.frac_bits));
  } else {
    // Public: a GGUF of Q8_0/F16 matrices stays compact (mapped once, shared by the three
    // party threads); other checkpoints are encoded wide (the float weights freed after).
    MPCACHE_ASSIGN_OR_RETURN(ring, infer::LoadRingModel(o.model, o.frac_bits));
  }
  const model::ModelConfig config = ring->config;
  MPCACHE_RETURN_IF_ERROR(o.sampling.params.Validate(config.vocab_size));
  MPCACHE_ASSIGN_OR_RETURN(model::Tokenizer tok,
                           model::Tokenizer::LoadLlama2c(o.tokenizer, config.vocab_size));
  MPCACHE_ASSIGN_OR_RETURN(std::vector<int> prompt, tok.Encode(o.prompt, true, false));
  const int steps = std::min(o.steps, config.seq_len);
  infer::InProcessOptions io;
  io.private_weights = o.weights == "private";
  io.share_dir = o.shares;
  io.seed = o.seed;
  io.sampling_seed = o.seed;
  io.session.sampling = o.sampling.params;
  io.threads = o.threads;
  MPCACHE_ASSIGN_OR_RETURN(io.open_style, mpc::ParseOpenStyle(o.open));
  io.preprocess_first = o.offline_first;
  io.session.math.frac_bits = o.frac_bits;
  o.kernels.ApplyTo(io.session.math);
  io.session.max_seq_len = std::max(steps, 1);
  MPCACHE_ASSIGN_OR_RETURN(io.session.mpcache, o.cache.Policy());
  MPCACHE_ASSIGN_OR_RETURN(infer::InProcessResult r,
                           infer::RunInProcess<P>(ring, prompt, tok.bos_id(), steps, io));

  std::vector<int> text_tokens(r.tokens.begin() + 1, r.tokens.end());
  if (!text_tokens.empty() && text_tokens.back() == tok.bos_id()) text_tokens.pop_back();
  const int decoded = std::max(r.report.decode_positions, 1);
  const double per = 1.0 / decoded;

  nlohmann::json phases = nlohmann::json::object();
  net::PhaseCounters total;
  for (const auto& [name, c] : r.report.decode_phases) {
    total += c;
    phases[name] = {{"seconds_per_token", c.seconds * per},
                    {"bytes_per_token", static_cast<double>(c.bytes_sent) * per},
                    {"rounds_per_token", static_cast<double>(c.rounds) * per}};
  }
  // Prefill (the positions before the last prompt token): party 0's totals minus decode.
  net::PhaseCounters all0;
  for (const auto& [name, c] : r.phases[0]) all0 += c;
  const int prefill_positions = r.report.positions - r.report.decode_positions;
  // Bytes sent per party: the busiest party (the decode phases of every party).
  std::uint64_t max_bytes = 0;
  for (const auto& party : r.phases) {
    std::uint64_t b = 0;
    for (const auto& [name, c] : party) b += c.bytes_sent;
    max_bytes = std::max(max_bytes, b);
  }
  nlohmann::json j;
  j["text"] = tok.DecodeAll(text_tokens, true);
  j["tokens"] = r.tokens;
  j["prompt_tokens"] = prompt.size();
  j["generated_tokens"] = r.report.released;
  j["decoded_positions"] = r.report.decode_positions;
  j["positions"] = r.report.positions;
  j["model"] = config.Describe();
  j["security"] = o.security;
  j["weights"] = o.weights;
  j["compact_weights"] = ring->is_compact();
  if (ring->is_compact()) j["weight_type"] = ring->compact->weight_type;
  j["threads"] = o.threads;
  j["open"] = o.open;
  j["cache"] = o.cache.cache;
  j["mpcache"] = o.cache.Describe();
  j["cached_rows"] = r.report.cached_rows;
  j["revealed_selections"] = r.report.revealed_selections;
  j["dp_epsilon_spent"] = r.report.epsilon_spent;
  j["frac_bits"] = o.frac_bits;
  j["kernels"] = nlohmann::json::object();
  for (const config::KernelPriceField& f : config::kKernelPriceFields) {
    j["kernels"][f.key] = o.kernels.*f.price;
  }
  j["sampling"] = o.sampling.params.Describe();
  if (!o.sampling.params.Greedy()) j["seed"] = o.seed;
  j["seconds_per_token"] = r.report.decode_seconds * per;
  j["bytes_per_token"] = static_cast<double>(total.bytes_sent) * per;
  j["rounds_per_token"] = static_cast<double>(total.rounds) * per;
  j["seconds"] = r.report.seconds;
  j["prefill_seconds"] = r.report.seconds - r.report.decode_seconds;
  j["prefill_positions"] = prefill_positions;
  j["prefill_bytes"] = all0.bytes_sent - total.bytes_sent;
  j["prefill_rounds"] = all0.rounds - total.rounds;
  j["bytes_sent_busiest_party_all_positions"] = max_bytes;
  j["phases"] = phases;
  if (o.rtt_ms) {
    const LinkEstimate e =
        EstimateOverLink(r.report.decode_seconds * per, static_cast<double>(total.rounds) * per,
                         static_cast<double>(total.bytes_sent) * per, *o.rtt_ms, o.link_mbit);
    j["over_link"] = {{"rtt_ms", e.rtt_ms},
                      {"link_mbit", e.link_mbit},
                      {"round_seconds_per_token", e.round_seconds},
                      {"transfer_seconds_per_token", e.transfer_seconds},
                      {"seconds_per_token", e.seconds_per_token}};
  }
  nlohmann::json off;
  off["dealer_seconds"] = r.offline.dealer_seconds;
  off["expand_seconds"] = r.offline.expand_seconds;
  off["bytes_to_party"] = r.offline.bytes_to_party;
  {
    // Per position, the prefill's included (the dealer runs on demand inside the loop, so
    // its traffic is not split by phase; prefill positions skip the classifier and argmax).
    nlohmann::json per = nlohmann::json::array();
    for (std::uint64_t b : r.offline.bytes_to_party) {
      per.push_back(static_cast<double>(b) / std::max(r.report.positions, 1));
    }
    off["bytes_to_party_per_position"] = per;
    off["bit_dealer_correction_bytes_per_position"] =
        static_cast<double>(r.bit_dealer_bytes) / std::max(r.report.positions, 1);
  }
  off["bytes_to_client"] = r.offline.bytes_to_client;
  off["batches"] = r.offline.batches;
  off["bit_dealer_correction_bytes"] = r.bit_dealer_bytes;
  off["bit_dealer_seconds"] = r.bit_dealer_seconds;
  off["offline_first"] = o.offline_first;
  off["prefetch_seconds"] = r.prefetch_seconds;
  j["offline"] = off;
  j["peak_rss_bytes"] = PeakRssBytes();
  if (io.private_weights) {
    j["load_weights"] = {
        {"seconds", r.load_seconds}, {"bytes_sent", r.load.bytes_sent}, {"rounds", r.load.rounds}};
  }
  return j;
}

int RunGenerateCommand(const GenerateOptions& o) {
  Result<nlohmann::json> j =
      o.security == "malicious" ? RunGenerate<mpc::Spdz2k>(o) : RunGenerate<mpc::SemiHonest>(o);
  if (const int rc = EmitJsonOrError(j, o.json); rc >= 0) return rc;
  std::cout << (*j)["text"].get<std::string>() << "\n";
  std::cerr << "generate: " << (*j)["model"].get<std::string>() << ", " << o.security << ", "
            << o.weights << " weights: " << (*j)["decoded_positions"] << " decoded tokens, "
            << (*j)["seconds_per_token"].get<double>() << " s/token, "
            << (*j)["rounds_per_token"].get<double>() << " rounds/token, "
            << (*j)["bytes_per_token"].get<double>() << " bytes/token sent per party\n";
  for (const auto& [name, p] : (*j)["phases"].items()) {
    std::cerr << "  " << name << ": " << p["seconds_per_token"].get<double>() << " s, "
              << p["rounds_per_token"].get<double>() << " rounds, "
              << p["bytes_per_token"].get<double>() << " bytes per token\n";
  }
  if (j->contains("over_link")) {
    const auto& e = (*j)["over_link"];
    std::cerr << "over a link of " << e["rtt_ms"].get<double>() << " ms round trip";
    if (o.link_mbit > 0) std::cerr << " and " << o.link_mbit << " Mbit/s";
    std::cerr << ": ~" << e["seconds_per_token"].get<double>() << " s/token (rounds "
              << e["round_seconds_per_token"].get<double>() << " s, bytes "
              << e["transfer_seconds_per_token"].get<double>()
              << " s; an estimate: tools/bench/link_estimate.h)\n";
  }
  return 0;
}

}  // namespace

void AddGenerateCommand(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<GenerateOptions>();
  CLI::App* cmd =
      app.add_subcommand("generate",
                         "Private generation (greedy or sampled): three parties in one process "
                         "(in-memory mesh), dealer and "
                         "client simulated; per-token time, bytes, rounds and per-phase breakdown");
  cmd->add_option("--model", opts->model, "Checkpoint (llama2.c .bin or GGUF)")->required();
  cmd->add_option("--tokenizer", opts->tokenizer, "llama2.c tokenizer.bin")->required();
  cmd->add_option("--prompt", opts->prompt, "Prompt text (default: BOS only)");
  cmd->add_option("--steps", opts->steps, "Positions incl. the prompt (llama2.c steps)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--security", opts->security, "malicious (SPDZ2k) or semi-honest")
      ->check(CLI::IsMember({"malicious", "semi-honest"}));
  cmd->add_option("--weights", opts->weights, "public or private (secret-shared) weights")
      ->check(CLI::IsMember({"public", "private"}));
  cmd->add_option("--shares", opts->shares,
                  "With --weights private: folder of `mpcache-model share` files (default: split "
                  "the model in memory)");
  AddCacheFlags(*cmd, opts->cache);
  cmd->add_option("--threads", opts->threads, "Worker threads per party for local products");
  cmd->add_option("--open", opts->open,
                  "How values are opened: all-to-all (1 round each) or split-king (2 rounds, a "
                  "third fewer bytes)")
      ->check(CLI::IsMember({"all-to-all", "split-king"}))
      ->capture_default_str();
  opts->sampling.Add(cmd, /*with_seed=*/false);
  cmd->add_option("--seed", opts->seed,
                  "Dealer, party and sampling-noise seeds (reproducible runs: the same --seed "
                  "samples the tokens mpcache-model run --engine fixed --seed samples)")
      ->capture_default_str();
  cmd->add_option("--frac-bits", opts->frac_bits, "Fixed-point fractional bits");
  for (const config::KernelPriceField& f : config::kKernelPriceFields) {
    std::string flag = std::string("--") + f.key;  // rank_round_cost -> --rank-round-cost
    std::replace(flag.begin(), flag.end(), '_', '-');
    cmd->add_option(flag, opts->kernels.*f.price,
                    std::string("What one round of ") + f.what +
                        " is worth in comparisons (a party config's kernels section)")
        ->check(CLI::Range(0, kMaxRoundCost))
        ->capture_default_str();
  }
  cmd->add_flag("--offline-first", opts->offline_first,
                "Produce all preprocessing before the online phase (runs the generation twice: "
                "once to learn the requests); online figures then exclude dealer work");
  cmd->add_flag("--json", opts->json, "Print one JSON object on stdout");
  cmd->add_option("--rtt-ms", opts->rtt_ms,
                  "Also estimate s/token between sites at this round-trip time (ms), from the "
                  "measured rounds (each costs rtt/2) and bytes")
      ->check(CLI::Range(0.0, 1e6));
  cmd->add_option("--link-mbit", opts->link_mbit,
                  "With --rtt-ms: each party's uplink in Mbit/s (default: unlimited)")
      ->check(CLI::Range(0.0, 1e9));
  cmd->callback([opts, exit_code] {
    if (opts->link_mbit > 0 && !opts->rtt_ms) {
      std::cerr << "error: --link-mbit needs --rtt-ms (the estimate is of a link); fix: add "
                   "--rtt-ms 0 for a bandwidth-only estimate\n";
      *exit_code = 2;
      return;
    }
    *exit_code = RunGenerateCommand(*opts);
  });
}

}  // namespace mpcache::tools
