// The sampling flags every generating command takes (SPEC §11: mpcache-model run,
// mpcache-bench generate, mpcache-client generate), with one meaning and one set of
// defaults: greedy unless --temperature > 0; llama2.c's top-p 0.9; no top-k; the noise
// seed from the OS unless --seed is given. Values are checked by SamplingParams::Validate,
// whose message names the flag and its valid range.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>

#include "common/fixed_sampling.h"

namespace mpcache::tools {

struct SamplingFlags {
  SamplingParams params{.temperature = 0, .top_p = 0.9, .top_k = 0};
  std::uint64_t seed = 0;
  CLI::Option* seed_option = nullptr;

  // with_seed = false: the command's own --seed (e.g. mpcache-bench's, which seeds the
  // dealers too) is also the noise seed.
  void Add(CLI::App* cmd, bool with_seed = true) {
    cmd->add_option("--temperature", params.temperature,
                    "Sampling temperature: 0 = greedy, else 0.01..100")
        ->capture_default_str();
    cmd->add_option("--top-p,--topp", params.top_p,
                    "Nucleus (top-p) mass in (0, 1], used when temperature > 0; 1 = off")
        ->capture_default_str();
    cmd->add_option("--top-k", params.top_k,
                    "Keep the k most likely tokens when temperature > 0; 0 = off")
        ->capture_default_str();
    if (!with_seed) return;
    seed_option = cmd->add_option("--seed", seed,
                                  "Seed of the sampling noise (the same seed gives the same "
                                  "tokens); default: drawn from the OS");
  }
  std::optional<std::uint64_t> Seed() const {
    if (seed_option != nullptr && seed_option->count() > 0) return seed;
    return std::nullopt;
  }
  // The seed to use: the user's, or a fresh one from the OS.
  Result<std::uint64_t> SeedOrRandom() const {
    if (auto s = Seed()) return *s;
    return RandomSamplingSeed();
  }
};

}  // namespace mpcache::tools
