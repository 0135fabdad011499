// Helpers shared by the daemons' end-to-end tests (daemons_test.cc, daemons_refusal_test.cc):
// the golden story, a metric's value, the model folder, the client run to completion or until
// it streams, and the same generation in one process.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "e2e/cluster.h"
#include "golden/golden_texts.h"

namespace mpcache::e2e {
// The golden 64-step story (one copy: golden/golden_texts.h).
inline const char* const kGolden64 = golden::kOnceUponATime64;

// The value of an unlabelled metric in a /metrics page (-1 when absent).
inline double MetricValue(const std::string& page, const std::string& name) {
  const auto at = page.find("\n" + name + " ");
  if (at == std::string::npos) return -1;
  return std::strtod(page.c_str() + at + 1 + name.size() + 1, nullptr);
}

inline std::string ModelDir() {
  const char* env = std::getenv("MPCACHE_MODEL_DIR");
  return env ? env : "../shared/models";
}

struct ClientRun {
  std::optional<int> code;
  std::string out, err;
};

inline ClientRun RunClient(Cluster& c, const std::string& prompt, int steps, bool json,
                           std::chrono::seconds timeout, const std::string& tag,
                           const std::vector<std::string>& extra = {}) {
  const std::string out = c.dir() + "/" + tag + ".out", err = c.dir() + "/" + tag + ".err";
  std::vector<std::string> argv{MPCACHE_CLIENT_BIN, "generate",           "--config",
                                c.client_config(),  "--prompt",           prompt,
                                "--max-tokens",     std::to_string(steps)};
  if (json) argv.push_back("--json");
  argv.insert(argv.end(), extra.begin(), extra.end());
  Process p(argv, out, err);
  ClientRun r;
  r.code = p.Wait(timeout);
  r.out = ReadFile(out);
  r.err = ReadFile(err);
  return r;
}

// The cluster's generation in one process, for comparison: `mpcache-bench generate` (kSecure:
// the secure run, malicious, public weights; at most 240 s) or `mpcache-model run --engine
// fixed` (kPlaintext: the plaintext twin; at most 120 s) of stories260K at the cluster's 16
// fractional bits, with `extra` flags appended. Its JSON report; a failed run fails the test
// and returns null.
enum class OneProcess { kSecure, kPlaintext };
inline nlohmann::json RunInOneProcess(Cluster& c, OneProcess tool, const std::string& tag,
                                      const std::string& prompt, int steps,
                                      const std::vector<std::string>& extra = {}) {
  const bool secure = tool == OneProcess::kSecure;
  std::vector<std::string> argv =
      secure ? std::vector<std::string>{MPCACHE_BENCH_BIN, "generate",  "--security",
                                        "malicious",       "--weights", "public"}
             : std::vector<std::string>{MPCACHE_MODEL_BIN, "run", "--engine", "fixed"};
  for (const std::string& a :
       {std::string("--model"), ModelDir() + "/stories260K.bin", std::string("--tokenizer"),
        ModelDir() + "/tok512.bin", std::string("--prompt"), prompt, std::string("--steps"),
        std::to_string(steps), std::string("--frac-bits"), std::string("16"),
        std::string("--json")}) {
    argv.push_back(a);
  }
  argv.insert(argv.end(), extra.begin(), extra.end());
  const std::string out = c.dir() + "/" + tag + ".json", err = c.dir() + "/" + tag + ".err";
  Process p(argv, out, err);
  const std::optional<int> code = p.Wait(std::chrono::seconds(secure ? 240 : 120));
  EXPECT_EQ(code, 0) << argv[0] << " " << tag << ": " << ReadFile(err);
  if (code != 0) return nullptr;
  return nlohmann::json::parse(ReadFile(out), nullptr, /*allow_exceptions=*/false);
}

// Starts a 64-step generation of "Once upon a time" and waits (at most 120 s) until
// generated text streams past the prompt, or the client exits.
inline std::unique_ptr<Process> StartStreamingClient(Cluster& c, const std::string& out,
                                                     const std::string& err) {
  auto client = std::make_unique<Process>(
      std::vector<std::string>{MPCACHE_CLIENT_BIN, "generate", "--config", c.client_config(),
                               "--prompt", "Once upon a time", "--max-tokens", "64"},
      out, err);
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (ReadFile(out).size() <= std::string("Once upon a time, there").size() &&
         std::chrono::steady_clock::now() < end && client->running()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return client;
}

// Party 2's dealer address becomes a port nothing listens on (the host resolves: the party
// starts, and fails each request at its dealer connection).
inline bool PointPartyTwoAtNoDealer(Cluster& c) {
  std::string cfg = ReadFile(c.dir() + "/party2.yaml");
  const std::string key = "dealer: 127.0.0.1:" + std::to_string(c.dealer_port());
  if (cfg.find(key) == std::string::npos) return false;
  cfg.replace(cfg.find(key), key.size(), "dealer: 127.0.0.1:1");
  std::ofstream(c.dir() + "/party2.yaml") << cfg;
  return true;
}

}  // namespace mpcache::e2e
