#include "infer/decode_step.h"

#include <algorithm>
#include <chrono>
#include <memory>

#include "common/fixed_point.h"
#include "common/prg.h"
#include "infer/ring_model.h"
#include "infer/secure_llama.h"
#include "infer/secure_weights.h"
#include "model/compact_model.h"
#include "model/fixed_engine.h"
#include "model/synth.h"
#include "mpc/compare/binary_context.h"
#include "mpc/io.h"
#include "preproc/local_parties.h"

namespace mpcache::infer {
namespace {

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
                              const std::shared_ptr<const RingModel>& ring, const Prefill& prefill,
                              const DecodeStepOptions& o) {
  const auto t_setup = std::chrono::steady_clock::now();
  mpc::BinaryContext<P>* bctx = &b;
  mpc::Context<P>* ctx = &b.arith();
  const int self = ctx->self();
  MPCACHE_ASSIGN_OR_RETURN(SecureWeights<P> weights, PublicWeights<P>(*ctx, ring));
  SessionOptions so;
  so.math.frac_bits = o.frac_bits;
  so.max_seq_len = o.context + 1;
  so.kv_block_tokens = o.block;
  so.mpcache = o.policy;
  MPCACHE_ASSIGN_OR_RETURN(auto engine, SecureLlama<P>::Create(*bctx, weights, so));
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
Result<DecodeStepReport> RunStep(const DecodeStepOptions& o) {
  // Checked before the model is read and the dealers made.
  if (!o.channels.empty() && o.channels.size() != preproc::LocalParties<P>::kParties) {
    return InvalidArgument("decode step: " + std::to_string(o.channels.size()) +
                           " channels given; one per party (3) or none");
  }
  std::shared_ptr<const RingModel> ring;
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
    MPCACHE_ASSIGN_OR_RETURN(ring, EncodeCompactModel(cm, o.frac_bits));
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
    MPCACHE_ASSIGN_OR_RETURN(ring, EncodeModel(w, o.frac_bits));
  }  // the float weights are not needed any more
  const model::ModelConfig config = ring->config;

  preproc::LocalPartiesOptions lo = preproc::LocalPartiesFromSeed(o.seed);
  lo.threads = o.threads;
  lo.recv_timeout = std::chrono::seconds(1800);
  MPCACHE_ASSIGN_OR_RETURN(auto parties, preproc::LocalParties<P>::Create(lo));
  typename preproc::LocalParties<P>::Overrides over;
  over.channel = o.channels;
  auto outcomes = parties->Run(
      [&](mpc::BinaryContext<P>& b) {
        Result<PartyOutcome> r = RunParty<P>(b, ring, prefill, o);
        if (!r.ok() && r.error().code() != ErrorCode::kMacCheckFailed && o.on_party_failed) {
          o.on_party_failed(b.arith().self());
        }
        return r;
      },
      over);
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
  DecodeStepReport rep;
  rep.config = config;
  rep.prefill = prefill.source;
  rep.compact_weights = ring->is_compact();
  for (const auto& [name, c] : p0.phases) {
    net::PhaseCounters pc;
    pc.rounds = c.rounds;
    for (const auto& r : outcomes) {
      auto it = r->phases.find(name);
      if (it == r->phases.end()) continue;
      pc.bytes_sent = std::max(pc.bytes_sent, it->second.bytes_sent);
      pc.seconds = std::max(pc.seconds, it->second.seconds);
    }
    rep.phases[name] = pc;
    rep.rounds += c.rounds;
  }
  rep.seconds = seconds;
  rep.setup_seconds = setup;
  rep.bytes_per_party = busiest;
  rep.selected_tokens = p0.planned_rows;
  if (o.policy) {
    // Per cluster: what one completed cluster's representative costs (amortised per step
    // over cluster_tokens steps).
    DecodeStepReport::Representatives reps;
    for (const auto& r : outcomes) {
      reps.bytes_per_party_per_cluster =
          std::max(reps.bytes_per_party_per_cluster, r->end_prefill.bytes_sent);
      reps.seconds_per_cluster = std::max(reps.seconds_per_cluster, r->end_prefill.seconds);
    }
    reps.clusters =
        std::max(1, model::ShapeFor(*o.policy, o.context + 1).candidates * config.n_layers);
    reps.seconds_per_cluster /= reps.clusters;
    reps.bytes_per_party_per_cluster /= static_cast<std::uint64_t>(reps.clusters);
    reps.rounds = p0.end_prefill.rounds;
    rep.representatives = reps;
  }
  rep.token = p0.token;
  rep.plain_token = prefill.plain_next;
  return rep;
}

}  // namespace

Result<DecodeStepReport> RunDecodeStep(const DecodeStepOptions& o) {
  if (o.model.empty() == o.dims.empty()) {
    return InvalidArgument(
        "give exactly one of --model FILE (a checkpoint) or --dims D (7b or "
        "DIMxLAYERSxHEADS[...], synthetic weights)");
  }
  return o.malicious ? RunStep<mpc::Spdz2k>(o) : RunStep<mpc::SemiHonest>(o);
}

}  // namespace mpcache::infer
