// mpcache-model synth: a deterministic synthetic checkpoint with Llama-2 shapes and
// trained-model-like weight scales (see model/synth.h): by default a GGUF with Q8_0 matrices
// (what the parties map and compute from directly: the 7B shape is a 7.2 GB file), or
// --format gguf-f16 | gguf-f32 | llama2c.
#include <chrono>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "model/synth.h"
#include "tools/model/commands.h"

namespace mpcache::tools {
namespace {

struct SynthArgs {
  std::string dims;
  int layers = -1;  // -1: all
  std::string out;
  std::uint64_t seed = 1;
  bool separate_classifier = false;
  std::string format = "gguf-q8_0";
  bool json = false;
};

int RunSynth(const SynthArgs& args) {
  const auto fail = [](const Error& e) {
    std::cerr << "mpcache-model synth: " << e.ToString() << "\n";
    return 1;
  };
  auto config = model::ParseDims(args.dims);
  if (!config.ok()) return fail(config.error());
  if (args.layers != -1) {
    if (auto st = model::CutLayers(*config, args.layers); !st.ok()) return fail(st.error());
  }
  config->shared_classifier = !args.separate_classifier;
  const auto start = std::chrono::steady_clock::now();
  model::SynthOptions options;
  options.seed = args.seed;
  int last_percent = -1;
  options.progress = [&last_percent](std::uint64_t done, std::uint64_t total) {
    const int percent = static_cast<int>(100.0 * static_cast<double>(done) / total);
    if (percent / 5 != last_percent / 5) {
      std::cerr << "\rsynth: " << percent << "% (" << done / (1 << 20) << " MiB)" << std::flush;
      last_percent = percent;
    }
  };
  if (args.format == "gguf-q8_0" && (config->dim % 32 != 0 || config->hidden_dim % 32 != 0)) {
    return fail(InvalidArgument(
        "--format gguf-q8_0 needs dim and hidden_dim multiples of 32 (Q8_0 blocks), got dim " +
        std::to_string(config->dim) + " and hidden " + std::to_string(config->hidden_dim) +
        "; fix: --format gguf-f16 (or gguf-f32, llama2c)"));
  }
  Result<std::uint64_t> bytes =
      args.format == "llama2c"
          ? model::WriteSyntheticCheckpoint(*config, args.out, options)
          : model::WriteSyntheticGguf(*config, args.out,
                                      args.format == "gguf-f32"   ? model::GgmlType::kF32
                                      : args.format == "gguf-f16" ? model::GgmlType::kF16
                                                                  : model::GgmlType::kQ8_0,
                                      options);
  std::cerr << "\n";
  if (!bytes.ok()) return fail(bytes.error());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (args.json) {
    nlohmann::json j = {{"path", args.out},
                        {"bytes", *bytes},
                        {"seconds", seconds},
                        {"seed", args.seed},
                        {"format", args.format},
                        {"dim", config->dim},
                        {"hidden_dim", config->hidden_dim},
                        {"n_layers", config->n_layers},
                        {"n_heads", config->n_heads},
                        {"n_kv_heads", config->n_kv_heads},
                        {"vocab_size", config->vocab_size},
                        {"seq_len", config->seq_len},
                        {"shared_classifier", config->shared_classifier},
                        {"parameters", config->ParameterCount()}};
    std::cout << j.dump() << "\n";
  } else {
    std::cerr << "synth: wrote " << args.out << " (" << args.format << ", " << *bytes << " bytes, "
              << config->Describe() << ", " << config->ParameterCount() << " parameters) in "
              << seconds << " s\n";
  }
  return 0;
}

}  // namespace

void AddSynthCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<SynthArgs>();
  auto* cmd = app.add_subcommand(
      "synth", "Write a deterministic synthetic checkpoint (GGUF Q8_0 by default, or --format)");
  cmd->add_option("--dims", args->dims,
                  "7b, or DIMxLAYERSxHEADS[xKV_HEADS[xHIDDEN[xVOCAB[xSEQ]]]] (defaults: "
                  "KV_HEADS=HEADS, HIDDEN=Llama rule, VOCAB=32000, SEQ=4096)")
      ->required();
  cmd->add_option("--layers", args->layers, "Keep only the first L layers (default: all)");
  cmd->add_option("--out", args->out, "Output file")->required();
  cmd->add_option("--seed", args->seed, "Seed of the weights (default 1)");
  cmd->add_flag("--separate-classifier", args->separate_classifier,
                "Write a separate output classifier (wcls) instead of sharing the embedding");
  cmd->add_option("--format", args->format,
                  "gguf-q8_0 (default: int8 blocks with f16 scales, computed from directly by "
                  "the parties), gguf-f16, gguf-f32 or llama2c (legacy float32)")
      ->check(CLI::IsMember({"gguf-q8_0", "gguf-f16", "gguf-f32", "llama2c"}))
      ->capture_default_str();
  cmd->add_flag("--json", args->json, "Print one JSON object on stdout");
  cmd->callback([args, exit_code] { *exit_code = RunSynth(*args); });
}

}  // namespace mpcache::tools
