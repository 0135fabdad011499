// mpcache-bench subcommands. Each Add*Command registers its subcommand on `app`; when the
// user picks it, CLI11 runs the callback, which stores the command's exit code in *exit_code
// (0 on success; on error it has printed one clear line to stderr).
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>

#include "common/result.h"
#include "model/mpcache_policy.h"

namespace mpcache::tools {

// `ops`: per-operation microbenchmarks (mul, matmul, trunc), three parties in one process.
void AddOpsCommand(CLI::App& app, int* exit_code);

// `generate`: private greedy generation, three parties in one process (generate_command.cc).
void AddGenerateCommand(CLI::App& app, int* exit_code);

// The common end of a command: prints the error on stderr (returns 1), or with `json` the
// object on one stdout line (returns 0); returns -1 when the caller prints its text report.
int EmitJsonOrError(const Result<nlohmann::json>& result, bool json);

// `--repeat R`: the index of the median of R runs' seconds (the upper one for even R), whose
// figures the ops report (R >= 1).
std::size_t MedianRun(std::span<const double> seconds);

// --cache full|mpcache and MPCache's knobs (--cluster, --keep, --alpha, --representative,
// --share-layers), as `generate` and `decode-step` take them.
struct CacheFlags {
  std::string cache = "full";
  model::MpcachePolicy policy;
  std::string representative = "minmax";
  std::string reveal = "none";
  std::string eviction_score = "softmax";
  bool knobs_given = false;  // an MPCache knob was on the command line
  // The policy when --cache mpcache (validated), none for the full cache.
  Result<std::optional<model::MpcachePolicy>> Policy() const;
  // The knobs as JSON (the cache mode alone for the full cache).
  nlohmann::json Describe() const;
};
void AddCacheFlags(CLI::App& cmd, CacheFlags& flags);

// `decode-step`: one secure decoding step at a given context (decode_step_command.cc).
void AddDecodeStepCommand(CLI::App& app, int* exit_code);

// `weights`: the local public-weight products against memory bandwidth (weights_command.cc).
void AddWeightsCommand(CLI::App& app, int* exit_code);

}  // namespace mpcache::tools
