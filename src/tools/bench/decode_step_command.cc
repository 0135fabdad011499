// `mpcache-bench decode-step --model M | --dims D --layers L --context C --cache full|mpcache
//  --security S [--json]` (SPEC §11; MPCache knobs: commands.h AddCacheFlags)
//
// One decoding step at context C (infer/decode_step.h says what is set up and what is
// measured). Reported: seconds (slowest party), bytes sent per party (the busiest), rounds,
// and per phase (the attention products are `scores` and `mix`).
#include <algorithm>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "infer/decode_step.h"
#include "tools/bench/commands.h"
#include "tools/bench/step_mesh.h"

namespace mpcache::tools {
namespace {

struct DecodeStepOptions {
  std::string model, dims;
  int layers = 0;  // 0: the model's
  int context = 0;
  CacheFlags cache;
  std::string security = "malicious";
  int block = model::KvLayout::kDefaultBlockTokens;
  int threads = 1;
  std::uint64_t seed = 1;
  int frac_bits = kRecommendedFracBits;
  StepMeshFlags mesh;
  bool json = false;
};

Result<nlohmann::json> RunDecodeStep(const DecodeStepOptions& o,
                                     const std::optional<model::MpcachePolicy>& policy,
                                     const StepMeshPlan& mesh_plan) {
  infer::DecodeStepOptions io;
  io.model = o.model;
  io.dims = o.dims;
  io.layers = o.layers;
  io.context = o.context;
  io.policy = policy;
  io.malicious = o.security == "malicious";
  io.block = o.block;
  io.threads = o.threads;
  io.seed = o.seed;
  io.frac_bits = o.frac_bits;
  std::vector<std::unique_ptr<net::TlsMesh>> meshes;
  if (mesh_plan.enabled()) {
    // The step's receives wait as long as the in-memory mesh's (a WAN context's setup moves
    // gigabytes).
    MPCACHE_ASSIGN_OR_RETURN(meshes,
                             StartStepMeshes(mesh_plan, o.seed, std::chrono::seconds(1800)));
    for (auto& m : meshes) io.channels.push_back(m.get());
    io.on_party_failed = [&meshes](int p) {
      meshes[static_cast<std::size_t>(p)]->Abort("party " + std::to_string(p) +
                                                 "'s decoding step failed");
    };
  }
  Result<infer::DecodeStepReport> run = infer::RunDecodeStep(io);
  // What each party's TLS mesh carried since the step reset its counters (the step itself).
  nlohmann::json mesh_bytes = nlohmann::json::array();
  for (const auto& m : meshes) mesh_bytes.push_back(m->stats().Total().bytes_sent);
  CloseStepMeshes(meshes);
  MPCACHE_ASSIGN_OR_RETURN(const infer::DecodeStepReport r, std::move(run));
  nlohmann::json phases = nlohmann::json::object();
  for (const auto& [name, c] : r.phases) {
    phases[name] = {
        {"seconds", c.seconds}, {"bytes_per_party", c.bytes_sent}, {"rounds", c.rounds}};
  }
  nlohmann::json j;
  j["model"] = o.model.empty() ? "synthetic " + o.dims : o.model;
  j["config"] = r.config.Describe();
  j["layers"] = r.config.n_layers;
  j["context"] = o.context;
  j["cache"] = o.cache.cache;
  j["mpcache"] = o.cache.Describe();
  j["security"] = o.security;
  j["weights"] = "public";
  j["compact_weights"] = r.compact_weights;
  j["kv_block_tokens"] = std::min(o.block, o.context + 1);
  j["threads"] = o.threads;
  j["mesh"] = o.mesh.Describe();
  if (o.mesh.enabled()) j["mesh_bytes_sent"] = mesh_bytes;
  j["prefill"] = r.prefill;
  j["seconds"] = r.seconds;
  j["bytes_per_party"] = r.bytes_per_party;
  j["rounds"] = r.rounds;
  j["selected_tokens"] = r.selected_tokens;
  j["phases"] = phases;
  j["setup_seconds"] = r.setup_seconds;
  if (r.representatives) {
    j["representatives"] = {
        {"clusters", r.representatives->clusters},
        {"seconds_per_cluster", r.representatives->seconds_per_cluster},
        {"bytes_per_party_per_cluster", r.representatives->bytes_per_party_per_cluster},
        {"rounds", r.representatives->rounds}};
  }
  j["token"] = r.token;
  if (r.plain_token >= 0) {
    j["plain_token"] = r.plain_token;
    j["agrees_with_plaintext"] = r.token == r.plain_token;
  }
  return j;
}

int RunDecodeStepCommand(const DecodeStepOptions& o) {
  if (o.model.empty() == o.dims.empty()) {
    std::cerr << "error: give exactly one of --model FILE (a checkpoint) or --dims D (7b or "
                 "DIMxLAYERSxHEADS[...], synthetic weights)\n";
    return 2;
  }
  Result<StepMeshPlan> mesh_plan = ParseStepMeshFlags(o.mesh);
  if (!mesh_plan.ok()) {
    std::cerr << "error: " << mesh_plan.error().ToString() << "\n";
    return 2;
  }
  auto policy = o.cache.Policy();
  if (!policy.ok()) {
    std::cerr << "error: " << policy.error().ToString() << "\n";
    return 2;
  }
  Result<nlohmann::json> j = RunDecodeStep(o, *policy, *mesh_plan);
  if (const int rc = EmitJsonOrError(j, o.json); rc >= 0) return rc;
  std::cerr << "prefill: " << (*j)["prefill"].get<std::string>() << "\n";
  std::cout << "decode step at context " << o.context << " (" << (*j)["config"].get<std::string>()
            << ", " << o.security << "): " << (*j)["seconds"].get<double>() << " s, "
            << (*j)["bytes_per_party"].get<std::uint64_t>() << " bytes per party, "
            << (*j)["rounds"].get<std::uint64_t>() << " rounds\n";
  for (const auto& [name, p] : (*j)["phases"].items()) {
    std::cout << "  " << name << ": " << p["seconds"].get<double>() << " s, "
              << p["bytes_per_party"].get<std::uint64_t>() << " bytes, "
              << p["rounds"].get<std::uint64_t>() << " rounds\n";
  }
  return 0;
}

}  // namespace

void AddDecodeStepCommand(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<DecodeStepOptions>();
  CLI::App* cmd = app.add_subcommand(
      "decode-step",
      "One secure decoding step at a given context (three parties in one process; the context "
      "is a plaintext prefill secret-shared into the KV memory): time, bytes, rounds, phases");
  cmd->add_option("--model", opts->model, "Checkpoint (llama2.c .bin or GGUF)");
  cmd->add_option("--dims", opts->dims,
                  "Synthetic weights of this shape: 7b or DIMxLAYERSxHEADS[xKV[xHIDDEN[xVOCAB["
                  "xSEQ]]]]");
  cmd->add_option("--layers", opts->layers, "Use the first L layers (default: all)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--context", opts->context, "Cached positions before the step")
      ->required()
      ->check(CLI::Range(1, 1 << 20));
  AddCacheFlags(*cmd, opts->cache);
  cmd->add_option("--security", opts->security, "malicious (SPDZ2k) or semi-honest")
      ->check(CLI::IsMember({"malicious", "semi-honest"}));
  cmd->add_option("--kv-block", opts->block, "KV rows per block (one fixed mask each)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--threads", opts->threads, "Worker threads per party for local products")
      ->check(CLI::Range(1, 256));
  cmd->add_option("--seed", opts->seed, "Dealer/party seeds and synthetic data");
  cmd->add_option("--frac-bits", opts->frac_bits, "Fixed-point fractional bits");
  AddStepMeshFlags(*cmd, opts->mesh);
  cmd->add_flag("--json", opts->json, "Print one JSON object on stdout");
  cmd->callback([opts, exit_code] { *exit_code = RunDecodeStepCommand(*opts); });
}

}  // namespace mpcache::tools
