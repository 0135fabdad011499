// `mpcache-bench decode-step --model M | --dims D --layers L --context C --cache full|mpcache
//  --security S [--json]` (SPEC §11; MPCache knobs: commands.h AddCacheFlags)
//
// One decoding step at context C, three parties in one process over the in-memory mesh, the
// in-process dealers feeding them on demand. Setup (not measured): the context's keys and
// values are a plaintext prefill secret-shared into the KV memory — with --model the
// fixed-point engine's own K/V of C tokens (and its next token is the plaintext twin of the
// step's), with --dims synthetic K/V rows of the keys' scale (the step's cost does not depend
// on the values) — entered by party 0 and masked into their blocks in bulk, then MAC-checked.
// Measured: the step itself, fully secure: the token's secret one-hot (entered by party 0)
// through every layer attending all C + 1 rows (or MPCache's selection of them), the logits, their
// secret argmax and the MAC check of everything opened. Reported: seconds (slowest party), bytes
// sent per party (the busiest), rounds, and per phase (the attention products are `scores` and
// `mix`).
#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "common/fixed_point.h"
#include "infer/ring_model.h"
#include "infer/secure_llama.h"
#include "infer/secure_weights.h"
#include "model/checkpoint.h"
#include "model/compact_model.h"
#include "model/fixed_engine.h"
#include "model/synth.h"
#include "mpc/compare/binary_context.h"
#include "mpc/io.h"
#include "preproc/local_parties.h"
#include "tools/bench/commands.h"

namespace mpcache::tools {
namespace {

struct DecodeStepOptions {
  std::string model, dims;
  int layers = 0;  // 0: the model's
  int context = 0;
  CacheFlags cache;
  std::optional<model::MpcachePolicy> policy;  // from `cache`
  std::string security = "malicious";
  int block = model::KvLayout::kDefaultBlockTokens;
  int threads = 1;
  std::uint64_t seed = 1;
  int frac_bits = kRecommendedFracBits;
  bool json = false;
};

// The clear prefill: per layer, C rows of keys and of values (ring encodings, kv_dim each),
// the token of position C and, with a real model, the plaintext engine's next token.
struct Prefill {
  std::string source;
  std::vector<std::vector<std::uint64_t>> keys, values;  // [layer][C x kv_dim]
  int token = 1;
  int plain_next = -1;  // -1: no plaintext twin (synthetic rows)
};

int PrefillToken(int t, int vocab) {
  return t == 0 ? 1 : static_cast<int>((static_cast<std::uint64_t>(t) * 7919 + 3) % vocab);
}

model::FixedEngineOptions PrefillEngineOptions(const DecodeStepOptions& o) {
  model::FixedEngineOptions fo;
  fo.math.frac_bits = o.frac_bits;
  fo.max_seq_len = o.context + 1;
  fo.kv_block_tokens = o.block;
  fo.mpcache = o.policy;
  fo.threads = o.threads;
  return fo;
}

// `e`: the plaintext twin of the secure engine (wide or compact weights).
Result<Prefill> RealPrefill(model::FixedEngine e, const DecodeStepOptions& o) {
  const model::ModelConfig& config = e.config();
  const int vocab = config.vocab_size;
  for (int t = 0; t < o.context; ++t) {
    if (auto r = e.Forward(PrefillToken(t, vocab), t); !r.ok()) return r.error();
  }
  Prefill p;
  p.source = "plaintext fixed-point prefill of " + std::to_string(o.context) +
             " tokens, secret-shared into the KV memory";
  p.token = e.Argmax();  // greedy continuation: the step decodes this token
  const auto kv = static_cast<std::size_t>(config.kv_dim());
  for (int l = 0; l < config.n_layers; ++l) {
    std::vector<std::uint64_t> k, v;
    for (const model::KvBlockUse& u : e.kv_cache().layout().Plan(l).blocks) {
      for (int r = 0; r < u.rows; ++r) {
        const std::uint64_t* kr = e.kv_cache().Key(l, u.block, r);
        const std::uint64_t* vr = e.kv_cache().Value(l, u.block, r);
        k.insert(k.end(), kr, kr + kv);
        v.insert(v.end(), vr, vr + kv);
      }
    }
    p.keys.push_back(std::move(k));
    p.values.push_back(std::move(v));
  }
  if (auto r = e.Forward(p.token, o.context); !r.ok()) return r.error();
  p.plain_next = e.Argmax();
  return p;
}

// Synthetic rows: uniform in [-2, 2) at f fractional bits (a trained Llama's keys and values
// are O(1)); the secure step's cost is the same for any values.
Prefill SyntheticPrefill(const model::ModelConfig& c, const DecodeStepOptions& o) {
  Prefill p;
  p.source = "synthetic K/V rows (uniform in [-2, 2)) of " + std::to_string(o.context) +
             " positions, secret-shared into the KV memory";
  p.token = PrefillToken(o.context, c.vocab_size);
  Prg prg(DeriveSeed(TestSeed(o.seed), 0xC0DE));
  const FixedPoint fp{o.frac_bits};
  const std::size_t n = static_cast<std::size_t>(o.context) * c.kv_dim();
  for (int l = 0; l < c.n_layers; ++l) {
    for (auto* list : {&p.keys, &p.values}) {
      std::vector<std::uint64_t> rows(n);
      for (auto& x : rows) {
        x = fp.Encode(
            static_cast<double>(prg.NextU64() >> 11) / static_cast<double>(1ull << 53) * 4.0 - 2.0);
      }
      list->push_back(std::move(rows));
    }
  }
  return p;
}

struct PartyOutcome {
  double seconds = 0, setup_seconds = 0;
  std::map<std::string, net::PhaseCounters> phases;
  int token = -1;
  int planned_rows = 0;
  net::PhaseCounters end_prefill;
};

constexpr std::size_t kPrefillChunkRows = 256;  // rows entered and masked per round

template <typename P>
Result<PartyOutcome> RunParty(mpc::BinaryContext<P>& b,
                              const std::shared_ptr<const infer::RingModel>& ring,
                              const Prefill& prefill, const DecodeStepOptions& o) {
  const auto t_setup = std::chrono::steady_clock::now();
  mpc::BinaryContext<P>* bctx = &b;
  mpc::Context<P>* ctx = &b.arith();
  const int self = ctx->self();
  MPCACHE_ASSIGN_OR_RETURN(infer::SecureWeights<P> weights, infer::PublicWeights<P>(*ctx, ring));
  infer::SessionOptions so;
  so.math.frac_bits = o.frac_bits;
  so.max_seq_len = o.context + 1;
  so.kv_block_tokens = o.block;
  so.mpcache = o.policy;
  MPCACHE_ASSIGN_OR_RETURN(auto engine, infer::SecureLlama<P>::Create(*bctx, weights, so));
  const model::ModelConfig& c = ring->config;
  const auto kv = static_cast<std::size_t>(c.kv_dim());
  // Setup: party 0 enters the clear rows, chunk by chunk; every chunk is masked into its
  // blocks in one round.
  for (int l = 0; l < c.n_layers; ++l) {
    const auto& keys = prefill.keys[static_cast<std::size_t>(l)];
    const auto& values = prefill.values[static_cast<std::size_t>(l)];
    for (std::size_t r0 = 0; r0 < static_cast<std::size_t>(o.context); r0 += kPrefillChunkRows) {
      const std::size_t rows =
          std::min(kPrefillChunkRows, static_cast<std::size_t>(o.context) - r0);
      std::vector<std::uint64_t> clear;
      if (self == 0) {
        clear.assign(keys.begin() + static_cast<std::ptrdiff_t>(r0 * kv),
                     keys.begin() + static_cast<std::ptrdiff_t>((r0 + rows) * kv));
        clear.insert(clear.end(), values.begin() + static_cast<std::ptrdiff_t>(r0 * kv),
                     values.begin() + static_cast<std::ptrdiff_t>((r0 + rows) * kv));
      }
      MPCACHE_ASSIGN_OR_RETURN(mpc::Shares<P> both, mpc::Input<P>(*ctx, 0, clear, 2 * rows * kv));
      MPCACHE_RETURN_IF_ERROR(engine->kv().LoadPrefill(*ctx, l, both.Slice(0, rows * kv),
                                                       both.Slice(rows * kv, rows * kv)));
    }
  }
  std::vector<std::uint64_t> one_hot;
  if (self == 0) {
    one_hot.assign(static_cast<std::size_t>(c.vocab_size), 0);
    one_hot[static_cast<std::size_t>(prefill.token)] = 1;
  }
  MPCACHE_ASSIGN_OR_RETURN(mpc::Shares<P> x,
                           mpc::Input<P>(*ctx, 0, one_hot, static_cast<std::size_t>(c.vocab_size)));
  MPCACHE_RETURN_IF_ERROR(mpc::CheckAllMacs(*bctx));
  PartyOutcome out;
  {
    // End of the prefill: MPCache's representatives of the context's clusters (measured
    // apart: a one-off cost of the prompt, then one cluster every cluster_tokens steps).
    ctx->stats().Reset();
    const auto t = std::chrono::steady_clock::now();
    MPCACHE_RETURN_IF_ERROR(engine->kv().EndPrefill(*ctx, 0));
    MPCACHE_RETURN_IF_ERROR(mpc::CheckAllMacs(*bctx));
    out.end_prefill = ctx->stats().Total();
    out.end_prefill.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  }
  out.setup_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t_setup).count();

  // The measured step.
  ctx->stats().Reset();
  const auto t0 = std::chrono::steady_clock::now();
  MPCACHE_RETURN_IF_ERROR(engine->Forward(x, o.context));
  MPCACHE_ASSIGN_OR_RETURN(mpc::Shares<P> logits, engine->Logits());
  MPCACHE_ASSIGN_OR_RETURN(mpc::Shares<P> next, engine->ArgmaxOneHot(logits));
  {
    net::PhaseScope phase(ctx->stats(), "mac_check");
    MPCACHE_RETURN_IF_ERROR(mpc::CheckAllMacs(*bctx));
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out.phases = ctx->stats().phases();
  const int length = engine->kv().Plan(0).length();
  out.planned_rows = o.policy ? model::ShapeFor(*o.policy, length).attended() : length;

  // Not measured: the token, opened to check it against the plaintext twin.
  mpc::Shares<P> index(1);
  for (std::size_t i = 0; i < next.size(); ++i) {
    next.v[i] *= static_cast<std::uint64_t>(i);
    index.v[0] += next.v[i];
    if constexpr (P::kMalicious) index.m[0] += next.m[i] * static_cast<std::uint64_t>(i);
  }
  MPCACHE_ASSIGN_OR_RETURN(std::vector<std::uint64_t> opened, ctx->Open(index));
  MPCACHE_RETURN_IF_ERROR(mpc::CheckAllMacs(*bctx));
  out.token = static_cast<int>(opened[0]);
  return out;
}

Status CheckContext(const model::ModelConfig& c, const DecodeStepOptions& o) {
  if (o.context + 1 > c.seq_len) {
    return InvalidArgument("--context " + std::to_string(o.context) +
                           " leaves no room for the step in the model's " +
                           std::to_string(c.seq_len) + "-position context; use at most " +
                           std::to_string(c.seq_len - 1));
  }
  return Status::Ok();
}

template <typename P>
Result<nlohmann::json> RunDecodeStep(const DecodeStepOptions& o) {
  std::shared_ptr<const infer::RingModel> ring;
  Prefill prefill;
  bool compact = false;
  if (!o.model.empty()) {
    MPCACHE_ASSIGN_OR_RETURN(compact, model::CompactModel::IsCompactCheckpoint(o.model));
  }
  if (compact) {
    // A GGUF of Q8_0/F16 matrices: mapped, computed from directly (the prefill by the
    // compact fixed-point twin); never widened.
    MPCACHE_ASSIGN_OR_RETURN(std::shared_ptr<const model::CompactModel> cm,
                             model::CompactModel::Open(o.model));
    if (o.layers > 0) {
      if (o.layers > cm->config.n_layers) {
        return InvalidArgument("--layers " + std::to_string(o.layers) + ": the model has " +
                               std::to_string(cm->config.n_layers));
      }
      MPCACHE_ASSIGN_OR_RETURN(cm, cm->FirstLayers(o.layers));
    }
    MPCACHE_RETURN_IF_ERROR(CheckContext(cm->config, o));
    MPCACHE_ASSIGN_OR_RETURN(model::FixedEngine e,
                             model::FixedEngine::Create(cm, PrefillEngineOptions(o)));
    MPCACHE_ASSIGN_OR_RETURN(prefill, RealPrefill(std::move(e), o));
    MPCACHE_ASSIGN_OR_RETURN(ring, infer::EncodeCompactModel(cm, o.frac_bits));
  } else {
    model::ModelWeights w;
    if (!o.model.empty()) {
      MPCACHE_ASSIGN_OR_RETURN(w, model::LoadCheckpoint(o.model));
      if (o.layers > 0) {
        if (o.layers > w.config.n_layers) {
          return InvalidArgument("--layers " + std::to_string(o.layers) + ": the model has " +
                                 std::to_string(w.config.n_layers));
        }
        w.layers.resize(static_cast<std::size_t>(o.layers));
        w.config.n_layers = o.layers;
      }
    } else {
      MPCACHE_ASSIGN_OR_RETURN(model::ModelConfig c, model::ParseDims(o.dims));
      if (o.layers > 0) MPCACHE_RETURN_IF_ERROR(model::CutLayers(c, o.layers));
      c.seq_len = std::max(c.seq_len, o.context + 1);
      MPCACHE_ASSIGN_OR_RETURN(w, model::MakeSyntheticWeights(c, o.seed));
    }
    MPCACHE_RETURN_IF_ERROR(CheckContext(w.config, o));
    if (!o.model.empty()) {
      MPCACHE_ASSIGN_OR_RETURN(model::FixedEngine e,
                               model::FixedEngine::Create(w, PrefillEngineOptions(o)));
      MPCACHE_ASSIGN_OR_RETURN(prefill, RealPrefill(std::move(e), o));
    } else {
      prefill = SyntheticPrefill(w.config, o);
    }
    MPCACHE_ASSIGN_OR_RETURN(ring, infer::EncodeModel(w, o.frac_bits));
  }  // the float weights are not needed any more
  const model::ModelConfig config = ring->config;

  preproc::LocalPartiesOptions lo = preproc::LocalPartiesFromSeed(o.seed);
  lo.threads = o.threads;
  lo.recv_timeout = std::chrono::seconds(1800);
  MPCACHE_ASSIGN_OR_RETURN(auto parties, preproc::LocalParties<P>::Create(lo));
  auto outcomes =
      parties->Run([&](mpc::BinaryContext<P>& b) { return RunParty<P>(b, ring, prefill, o); });
  for (std::size_t p = 0; p < outcomes.size(); ++p) {
    if (!outcomes[p].ok()) return outcomes[p].error().WithContext("party " + std::to_string(p));
  }
  const PartyOutcome& p0 = *outcomes[0];
  double seconds = 0, setup = 0;
  std::uint64_t busiest = 0;
  for (const auto& r : outcomes) {
    seconds = std::max(seconds, r->seconds);
    setup = std::max(setup, r->setup_seconds);
    std::uint64_t b = 0;
    for (const auto& [name, c] : r->phases) b += c.bytes_sent;
    busiest = std::max(busiest, b);
  }
  nlohmann::json phases = nlohmann::json::object();
  std::uint64_t rounds = 0;
  for (const auto& [name, c] : p0.phases) {
    std::uint64_t bytes = 0;
    double secs = 0;
    for (const auto& r : outcomes) {
      auto it = r->phases.find(name);
      if (it == r->phases.end()) continue;
      bytes = std::max(bytes, it->second.bytes_sent);
      secs = std::max(secs, it->second.seconds);
    }
    phases[name] = {{"seconds", secs}, {"bytes_per_party", bytes}, {"rounds", c.rounds}};
    rounds += c.rounds;
  }
  nlohmann::json j;
  j["model"] = o.model.empty() ? "synthetic " + o.dims : o.model;
  j["config"] = config.Describe();
  j["layers"] = config.n_layers;
  j["context"] = o.context;
  j["cache"] = o.cache.cache;
  j["mpcache"] = o.cache.Describe();
  j["security"] = o.security;
  j["weights"] = "public";
  j["compact_weights"] = ring->is_compact();
  j["kv_block_tokens"] = std::min(o.block, o.context + 1);
  j["threads"] = o.threads;
  j["prefill"] = prefill.source;
  j["seconds"] = seconds;
  j["bytes_per_party"] = busiest;
  j["rounds"] = rounds;
  j["selected_tokens"] = p0.planned_rows;
  j["phases"] = phases;
  j["setup_seconds"] = setup;
  if (o.policy) {
    // Per cluster: what one completed cluster's representative costs (amortised per step
    // over cluster_tokens steps).
    std::uint64_t bytes = 0;
    double secs = 0;
    for (const auto& r : outcomes) {
      bytes = std::max(bytes, r->end_prefill.bytes_sent);
      secs = std::max(secs, r->end_prefill.seconds);
    }
    const int clusters =
        std::max(1, model::ShapeFor(*o.policy, o.context + 1).candidates * config.n_layers);
    j["representatives"] = {
        {"clusters", clusters},
        {"seconds_per_cluster", secs / clusters},
        {"bytes_per_party_per_cluster", bytes / static_cast<std::uint64_t>(clusters)},
        {"rounds", p0.end_prefill.rounds}};
  }
  j["token"] = p0.token;
  if (prefill.plain_next >= 0) {
    j["plain_token"] = prefill.plain_next;
    j["agrees_with_plaintext"] = p0.token == prefill.plain_next;
  }
  return j;
}

int RunDecodeStepCommand(DecodeStepOptions o) {
  if (o.model.empty() == o.dims.empty()) {
    std::cerr << "error: give exactly one of --model FILE (a checkpoint) or --dims D (7b or "
                 "DIMxLAYERSxHEADS[...], synthetic weights)\n";
    return 2;
  }
  auto policy = o.cache.Policy();
  if (!policy.ok()) {
    std::cerr << "error: " << policy.error().ToString() << "\n";
    return 2;
  }
  o.policy = *policy;
  Result<nlohmann::json> j =
      o.security == "malicious" ? RunDecodeStep<mpc::Spdz2k>(o) : RunDecodeStep<mpc::SemiHonest>(o);
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
  cmd->add_flag("--json", opts->json, "Print one JSON object on stdout");
  cmd->callback([opts, exit_code] { *exit_code = RunDecodeStepCommand(*opts); });
}

}  // namespace mpcache::tools
