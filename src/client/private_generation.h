// The client side of a private generation (SPEC §2, §3): tokenizes the prompt locally,
// connects to the three parties over TLS (their certificates must name
// mpcache-party-<id>), reconstructs its mask seed from the parties' XOR shares (checked
// against the hash all three relay), sends every party the same masked prompt
// d = onehot(token) - r, and unmasks each released token once all three parties sent the
// same masked value. Text is handed to `on_text` as tokens arrive (llama2.c decoding,
// prompt included). Any failure is one error naming the party at fault when known.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/config.h"
#include "common/fixed_sampling.h"
#include "common/result.h"

namespace spdlog {
class logger;
}

namespace mpcache::client {

struct PartyReport {
  int party = 0;
  int positions = 0, released = 0, decode_positions = 0;
  double seconds = 0, decode_seconds = 0;
  std::uint64_t decode_bytes_sent = 0, decode_rounds = 0;
  bool mpcache = false;        // the party ran MPCache's selection (else the full cache)
  int attended = 0;            // positions its last step attended per layer
  std::uint64_t revealed = 0;  // MPCache selections revealed to the parties (reveal: plain | dp)
  double epsilon = 0;          // the DP budget they spent (reveal: dp)
};

struct GenerateResult {
  std::uint64_t session_id = 0;
  std::vector<int> tokens;  // BOS, prompt..., generated
  int prompt_tokens = 0;    // BOS included
  int generated = 0;
  std::string text;        // prompt included, as llama2.c prints it
  std::uint64_t seed = 0;  // sampling: the seed of the client's noise (to reproduce the run)
  double seconds = 0;      // wall time at the client
  std::vector<PartyReport> parties;
};

struct GenerateOptions {
  std::string prompt;
  int max_tokens = 64;  // positions, prompt included (llama2.c's -n steps)
  // Private sampling (common/fixed_sampling.h): greedy by default. The noise is drawn here,
  // at the client, from `seed` (a reproducible run) or, without one, from the OS.
  SamplingParams sampling;
  std::optional<std::uint64_t> seed;
};

using TextSink = std::function<void(std::string_view piece)>;

Result<GenerateResult> GeneratePrivately(const config::ClientConfig& cfg,
                                         const GenerateOptions& options, const TextSink& on_text,
                                         std::shared_ptr<spdlog::logger> log);

}  // namespace mpcache::client
