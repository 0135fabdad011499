// One secure decoding step at a given context, measured (SPEC §11 `mpcache-bench decode-step`;
// mpcache-tune calibrates and checks its cost model against it).
//
// Three parties in one process over the in-memory mesh, the in-process dealers feeding them on
// demand. Setup (not measured): the context's keys and values are a plaintext prefill
// secret-shared into the KV memory — with a model file the fixed-point engine's own K/V of C
// tokens (and its next token is the plaintext twin of the step's), with synthetic dims
// synthetic K/V rows of the keys' scale (the step's cost does not depend on the values) —
// entered by party 0 and masked into their blocks in bulk, then MAC-checked. Measured: the
// step itself, fully secure: the token's secret one-hot (entered by party 0) through every
// layer attending all C + 1 rows (or MPCache's selection of them), the logits, their secret
// argmax and the MAC check of everything opened.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/fixed_backend.h"
#include "common/result.h"
#include "model/checkpoint.h"
#include "model/kv_layout.h"
#include "model/mpcache_policy.h"
#include "net/channel.h"
#include "net/comm_stats.h"

namespace mpcache::infer {

struct DecodeStepOptions {
  std::string model, dims;  // exactly one: a checkpoint, or synthetic weights of these dims
  int layers = 0;           // 0: the model's
  int context = 0;
  std::optional<model::MpcachePolicy> policy;  // none: the full cache
  bool malicious = true;
  int block = model::KvLayout::kDefaultBlockTokens;
  int threads = 1;
  std::uint64_t seed = 1;
  int frac_bits = kRecommendedFracBits;
  // Optional, one per party (index = party id): the channel the party's context talks over,
  // e.g. a TLS mesh between network namespaces (mpcache-bench decode-step --mesh-addresses);
  // empty: the in-memory mesh. Counted the same either way (net::Channel), so bytes and
  // rounds do not depend on it; the seconds do.
  std::vector<net::Channel*> channels;
  // Called at a party whose run failed (not on a failed MAC check, which every party reaches
  // in step), from its thread: with `channels`, abort that party's link so that its peers stop
  // waiting for it (the in-memory mesh is aborted anyway).
  std::function<void(int party)> on_party_failed;
};

struct DecodeStepReport {
  model::ModelConfig config;
  std::string prefill;  // how the context was made
  bool compact_weights = false;
  double seconds = 0;                 // the slowest party
  double setup_seconds = 0;           // the slowest party
  std::uint64_t bytes_per_party = 0;  // the busiest party
  std::uint64_t rounds = 0;
  int selected_tokens = 0;  // positions the step attends
  // Per phase: bytes_sent and seconds of the busiest party, rounds (the same at all three).
  std::map<std::string, net::PhaseCounters> phases;
  // MPCache: the representatives of the context's clusters, made at the prefill's end (one
  // cluster every cluster_tokens steps afterwards), per cluster.
  struct Representatives {
    int clusters = 0;
    double seconds_per_cluster = 0;
    std::uint64_t bytes_per_party_per_cluster = 0;
    std::uint64_t rounds = 0;
  };
  std::optional<Representatives> representatives;
  int token = -1;
  int plain_token = -1;  // -1: no plaintext twin (synthetic rows)
};

Result<DecodeStepReport> RunDecodeStep(const DecodeStepOptions& o);

}  // namespace mpcache::infer
