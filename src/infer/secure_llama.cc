#include "infer/secure_llama.h"

#include <cmath>

#include "infer/mpcache_kv.h"
#include "model/float_ops.h"
#include "mpc/compare/select.h"
#include "mpc/fixed_batch.h"
#include "net/comm_stats.h"

namespace mpcache::infer {

using mpc::Shares;
using net::PhaseScope;

Status SessionOptions::Validate() const {
  MPCACHE_RETURN_IF_ERROR(math.Validate());
  if (max_seq_len < 0) return InvalidArgument("max_seq_len must be >= 0");
  if (reveal_intermediates && !debug) {
    return InvalidArgument(
        "reveal_intermediates opens secret activations to every party and is refused unless "
        "the session is a debug session (debug: true); never enable it in production");
  }
  return Status::Ok();
}

template <typename P>
SecureLlama<P>::SecureLlama(mpc::BinaryContext<P>& ctx, const SecureWeights<P>& weights,
                            SessionOptions options, std::unique_ptr<KvMemory<P>> cache)
    : ctx_(ctx), w_(weights), options_(options), be_(ctx), cache_(std::move(cache)) {}

template <typename P>
Result<std::unique_ptr<SecureLlama<P>>> SecureLlama<P>::Create(mpc::BinaryContext<P>& ctx,
                                                               const SecureWeights<P>& weights,
                                                               SessionOptions options) {
  MPCACHE_RETURN_IF_ERROR(options.Validate());
  MPCACHE_RETURN_IF_ERROR(options.sampling.Validate(weights.config.vocab_size));
  if (options.math.frac_bits != weights.frac_bits) {
    return InvalidArgument("the weights are encoded with " + std::to_string(weights.frac_bits) +
                           " fractional bits, the session uses " +
                           std::to_string(options.math.frac_bits));
  }
  const int seq = options.max_seq_len == 0 ? weights.config.seq_len : options.max_seq_len;
  std::unique_ptr<KvMemory<P>> cache;
  if (options.mpcache) {
    MPCACHE_ASSIGN_OR_RETURN(
        cache,
        MpcacheKv<P>::Create(ctx, weights.config, seq, options.kv_block_tokens, *options.mpcache,
                             options.math.compare_bits, options.math.frac_bits));
  } else {
    MPCACHE_ASSIGN_OR_RETURN(
        cache, SecureKvCache<P>::Create(weights.config, seq, options.kv_block_tokens));
  }
  return std::unique_ptr<SecureLlama>(new SecureLlama(ctx, weights, options, std::move(cache)));
}

template <typename P>
Result<std::vector<Shares<P>>> SecureLlama<P>::LinearSums(
    const std::vector<const SecureLinear<P>*>& ws, const std::vector<const Vec*>& xs) {
  std::vector<Vec> raw(ws.size());
  mpc::FixedProductBatch<P> batch(arith());
  std::vector<std::size_t> handle(ws.size());
  for (std::size_t i = 0; i < ws.size(); ++i) {
    const SecureLinear<P>& w = *ws[i];
    if (xs[i]->size() != w.cols) return InvalidArgument("linear layer: input size mismatch");
    if (w.is_private()) {
      handle[i] = batch.PrepareLeft(w.fixed, *xs[i], 1);
    } else {
      raw[i] = PublicProduct<P>(arith(), w, *xs[i]);
    }
  }
  MPCACHE_RETURN_IF_ERROR(batch.Exchange());
  for (std::size_t i = 0; i < ws.size(); ++i) {
    if (ws[i]->is_private()) raw[i] = batch.Take(handle[i]);
  }
  return raw;
}

template <typename P>
Result<typename SecureLlama<P>::Lazy> SecureLlama<P>::Linear(const SecureLinear<P>& w,
                                                             const Vec& x) {
  MPCACHE_ASSIGN_OR_RETURN(std::vector<Vec> sums, LinearSums({&w}, {&x}));
  Lazy out = be_.Trunc(sums[0], LinearShift(w, options_.math.frac_bits));
  MPCACHE_RETURN_IF_ERROR(Check());
  return out;
}

// x = one_hot . embedding: the selected row, exact (one-hot entries are 0/1 integers); with
// compact weights at 24 fractional bits, then truncated to f.
template <typename P>
Result<Shares<P>> SecureLlama<P>::Embed(const Vec& one_hot) {
  const SecureLinear<P>& e = w_.embedding;
  if (one_hot.size() != e.rows) return InvalidArgument("one-hot must have vocab entries");
  if (!e.is_private()) {
    Vec row = PublicLookup<P>(arith(), e, one_hot);
    // Compact weights: the row's exact integers carry 24 fractional bits; to f.
    const int f = options_.math.frac_bits;
    if (e.is_compact() && f < model::kCompactScaleBits) {
      row = be_.Materialize(be_.Trunc(row, model::kCompactScaleBits - f));
      MPCACHE_RETURN_IF_ERROR(Check());
    } else if (e.is_compact() && f > model::kCompactScaleBits) {
      const std::uint64_t up = std::uint64_t{1} << (f - model::kCompactScaleBits);
      mpc::MulPublicInPlace<P>(row, std::span<const std::uint64_t>(&up, 1));
    }
    return row;
  }
  mpc::FixedProductBatch<P> batch(arith());
  batch.PrepareRight(one_hot, 1, e.fixed);
  MPCACHE_RETURN_IF_ERROR(batch.Exchange());
  return batch.Take(0);
}

// Rotates interleaved pairs of every head: (a, b) -> (a cos - b sin, a sin + b cos), with
// public cos/sin at f bits (local); the caller truncates.
template <typename P>
Shares<P> SecureLlama<P>::Rope(const Vec& v, int pos) const {
  const model::ModelConfig& c = w_.config;
  const std::size_t hs = c.head_size(), n = v.size();
  std::vector<float> cos_f(hs / 2), sin_f(hs / 2);
  model::RopeTables(pos, c.head_size(), c.rope_theta, cos_f.data(), sin_f.data());
  const FixedPoint fp{options_.math.frac_bits};
  std::vector<std::uint64_t> same(n), cross(n);
  Vec swapped(n);
  for (std::size_t i = 0; i < n; i += 2) {
    const std::size_t k = (i % hs) / 2;
    const Ring64 cs = fp.Encode(cos_f[k]), sn = fp.Encode(sin_f[k]);
    same[i] = same[i + 1] = cs;
    cross[i] = fixed_detail::Neg(sn);  // a' = a cos + b (-sin)
    cross[i + 1] = sn;                 // b' = b cos + a sin
    swapped.v[i] = v.v[i + 1];
    swapped.v[i + 1] = v.v[i];
    if constexpr (P::kMalicious) {
      swapped.m[i] = v.m[i + 1];
      swapped.m[i + 1] = v.m[i];
    }
  }
  return mpc::Add(mpc::MulPublic<P>(v, same), mpc::MulPublic<P>(swapped, cross));
}

template <typename P>
Status SecureLlama<P>::Reveal(const std::string& name, const Lazy& v) {
  if (!options_.reveal_intermediates) return Status::Ok();
  Vec plain;
  {
    net::PhaseScope phase(arith().stats(), "debug_reveal");
    plain = be_.Materialize(v);
    MPCACHE_RETURN_IF_ERROR(Check());
  }
  return Reveal(name, plain);
}

template <typename P>
Status SecureLlama<P>::Reveal(const std::string& name, const Vec& v) {
  if (!options_.reveal_intermediates) return Status::Ok();
  net::PhaseScope phase(arith().stats(), "debug_reveal");
  MPCACHE_ASSIGN_OR_RETURN(std::vector<std::uint64_t> open, arith().Open(v));
  const FixedPoint fp{options_.math.frac_bits};
  auto& out = trace_[name];
  out.resize(open.size());
  for (std::size_t i = 0; i < open.size(); ++i) out[i] = fp.Decode(open[i]);
  return Status::Ok();
}

template <typename P>
typename SecureLlama<P>::Vec SecureLlama<P>::Norm(const Lazy& x, const Vec& gain,
                                                  const RingVec* clear) {
  const model::ModelConfig& c = w_.config;
  if (clear != nullptr) {
    return be_.Materialize(
        RmsNorm(be_, options_.math, x, std::span<const Ring64>(*clear), 1, c.dim, c.norm_eps));
  }
  return be_.Materialize(RmsNorm(be_, options_.math, x, Lazy(gain), 1, c.dim, c.norm_eps));
}

template <typename P>
const RingVec* SecureLlama<P>::ClearGain(RingVec RingLayer::*gain, int layer) const {
  if (w_.is_private || !w_.clear) return nullptr;
  return &(w_.clear->layers[static_cast<std::size_t>(layer)].*gain);
}

template <typename P>
Status SecureLlama<P>::Forward(const Vec& one_hot, int pos) {
  const model::ModelConfig& c = w_.config;
  const FixedMathParams& mp = options_.math;
  const int f = mp.frac_bits;
  const std::size_t d = c.dim, hd = c.hidden_dim, kv = c.kv_dim(), nh = c.n_heads;
  const std::size_t hs = c.head_size();
  if (pos < 0 || pos >= cache_->max_seq_len() || cache_->position() != pos) {
    return InvalidArgument("position " + std::to_string(pos) + " is not the next position " +
                           std::to_string(cache_->position()) + " of a context of " +
                           std::to_string(cache_->max_seq_len()));
  }
  net::CommStats& stats = arith().stats();
  {
    // The step's whole attention preprocessing, from public shapes, before any layer runs.
    PhaseScope phase(stats, "kv_append");
    MPCACHE_ASSIGN_OR_RETURN(step_plan_, cache_->Prepare(arith()));
  }
  const Ring64 inv_sqrt_hs =
      FixedPoint{kScoreScaleBits}.Encode(1.0 / std::sqrt(static_cast<double>(hs)));

  Lazy x;  // residual stream (dim): its last truncation rides on the next norm's products
  {
    PhaseScope phase(stats, "embedding");
    MPCACHE_ASSIGN_OR_RETURN(Vec e, Embed(one_hot));
    x = std::move(e);
  }
  for (int l = 0; l < c.n_layers; ++l) {
    const SecureLayer<P>& lw = w_.layers[static_cast<std::size_t>(l)];
    const std::string prefix = "layer" + std::to_string(l) + ".";
    mpc::LayerScope unit(arith().roles(), l);  // the units of work of the role table

    // xb = rmsnorm(x, rms_att)
    Vec xb;
    {
      PhaseScope phase(stats, "norms");
      xb = Norm(x, lw.rms_att, ClearGain(&RingLayer::rms_att, l));
      MPCACHE_RETURN_IF_ERROR(Check());
    }
    // q = wq xb (dim), k = wk xb (kv_dim), v = wv xb (kv_dim): one product (sums at 2f bits)
    Vec qkv_raw;
    {
      PhaseScope phase(stats, "projections");
      MPCACHE_ASSIGN_OR_RETURN(auto sums, LinearSums({&lw.wqkv}, {&xb}));
      qkv_raw = std::move(sums[0]);
    }
    Vec q, k, v;
    {
      PhaseScope phase(stats, "attention");
      // RoPE on q and k (public rotation of the sums, 3f bits) truncated by 2f, v by f: the
      // truncations open together, in one round.
      const int shift = LinearShift(lw.wqkv, f);
      Vec qk_sums = qkv_raw.Slice(0, d + kv);
      if (shift > f) {
        // Compact weights: the sums carry f + 24 bits, too many to rotate below 2^62; to 2f
        // first (one round more).
        qk_sums = be_.Materialize(be_.Trunc(qk_sums, shift - f));
        MPCACHE_RETURN_IF_ERROR(Check());
      } else if (shift < f) {
        const std::uint64_t up = std::uint64_t{1} << (f - shift);
        mpc::MulPublicInPlace<P>(qk_sums, std::span<const std::uint64_t>(&up, 1));
      }
      Vec qk = Rope(qk_sums.Slice(0, d), pos);
      qk.Append(Rope(qk_sums.Slice(d, kv), pos));
      const Lazy all =
          be_.Concat(be_.Trunc(qk, 2 * f), be_.Trunc(qkv_raw.Slice(d + kv, kv), shift));
      const Vec opened = be_.Materialize(all);
      MPCACHE_RETURN_IF_ERROR(Check());
      q = opened.Slice(0, d);
      k = opened.Slice(d, kv);
      v = opened.Slice(d + kv, kv);
    }
    {
      // key and value rows of position pos: masked once, here
      PhaseScope phase(stats, "kv_append");
      MPCACHE_RETURN_IF_ERROR(cache_->Append(arith(), l, std::move(k), std::move(v)));
    }
    const model::KvPlan plan = cache_->Plan(l);
    Vec raw_scores;
    {
      // s[h, t] = Trunc(q_h . k_t * 1/sqrt(head_size)) for the attended rows t
      PhaseScope phase(stats, "scores");
      MPCACHE_ASSIGN_OR_RETURN(raw_scores, cache_->Scores(arith(), l, plan, q));
    }
    const std::size_t cols = raw_scores.size() / nh;  // attended positions
    Vec probs;
    {
      PhaseScope phase(stats, "softmax");
      const Lazy scores = be_.Trunc(be_.MulConst(raw_scores, inv_sqrt_hs), f + kScoreScaleBits);
      // (n_heads, planned rows)
      probs = be_.Materialize(Softmax(be_, mp, scores, nh, cols, kScoreCompareBits));
      MPCACHE_RETURN_IF_ERROR(Check());
      if (cache_->ObservesScores(l)) {
        PhaseScope observe(stats, "evict");
        Vec sig = be_.Materialize(Sigmoid(be_, mp, scores));
        MPCACHE_RETURN_IF_ERROR(Check());
        MPCACHE_RETURN_IF_ERROR(cache_->ObserveScores(l, std::move(sig)));
      }
    }
    Vec att_raw;
    {
      // att_h = sum_t p[h, t] v_t
      PhaseScope phase(stats, "mix");
      MPCACHE_ASSIGN_OR_RETURN(att_raw, cache_->Mix(arith(), l, plan, probs));
    }
    Vec att;
    {
      PhaseScope phase(stats, "attention");
      att = be_.Materialize(be_.Trunc(att_raw, f));
      MPCACHE_RETURN_IF_ERROR(Check());
    }
    Lazy attn_out;
    {
      PhaseScope phase(stats, "projections");
      MPCACHE_ASSIGN_OR_RETURN(attn_out, Linear(lw.wo, att));
    }
    MPCACHE_RETURN_IF_ERROR(Reveal(prefix + "attn_out", attn_out));
    x = be_.Add(x, attn_out);  // residual

    // FFN: xb = rmsnorm(x, rms_ffn); h1 = w1 xb; h3 = w3 xb; x += w2 (silu(h1) * h3)
    {
      PhaseScope phase(stats, "norms");
      xb = Norm(x, lw.rms_ffn, ClearGain(&RingLayer::rms_ffn, l));
      MPCACHE_RETURN_IF_ERROR(Check());
    }
    Lazy h13;
    {
      PhaseScope phase(stats, "projections");
      MPCACHE_ASSIGN_OR_RETURN(h13, Linear(lw.w13, xb));
    }
    Vec gated;
    {
      PhaseScope phase(stats, "ffn");
      const Lazy h1 = fixed_detail::Slice(be_, h13, 0, hd);
      const Lazy h3 = fixed_detail::Slice(be_, h13, hd, hd);
      gated = be_.Materialize(SiluTimes(be_, mp, h1, h3));
      MPCACHE_RETURN_IF_ERROR(Check());
    }
    Lazy ffn_out;
    {
      PhaseScope phase(stats, "projections");
      MPCACHE_ASSIGN_OR_RETURN(ffn_out, Linear(lw.w2, gated));
    }
    MPCACHE_RETURN_IF_ERROR(Reveal(prefix + "ffn_out", ffn_out));
    x = be_.Add(x, ffn_out);
    MPCACHE_RETURN_IF_ERROR(Reveal(prefix + "out", x));
  }
  x_ = std::move(x);
  return Status::Ok();
}

template <typename P>
Result<Shares<P>> SecureLlama<P>::Logits() {
  if (x_.size() == 0) return InvalidArgument("Logits() needs a Forward() first");
  net::CommStats& stats = arith().stats();
  Vec xf;
  {
    PhaseScope phase(stats, "norms");
    xf = Norm(x_, w_.rms_final, w_.is_private || !w_.clear ? nullptr : &w_.clear->rms_final);
    MPCACHE_RETURN_IF_ERROR(Check());
  }
  MPCACHE_RETURN_IF_ERROR(Reveal("final_norm", xf));
  Vec logits;
  {
    PhaseScope phase(stats, "classifier_argmax");
    MPCACHE_ASSIGN_OR_RETURN(Lazy out, Linear(w_.classifier(), xf));
    logits = be_.Materialize(out);
    MPCACHE_RETURN_IF_ERROR(Check());
  }
  MPCACHE_RETURN_IF_ERROR(Reveal("logits", logits));
  return logits;
}

template <typename P>
Result<Shares<P>> SecureLlama<P>::ArgmaxOneHot(const Vec& logits) {
  PhaseScope phase(arith().stats(), "classifier_argmax");
  // Ranked in groups (common/fixed_math.h): exact, the first maximum like a plaintext scan.
  const RankArgMax<mpc::SecureBackend<P>> am =
      RowArgMaxRank(be_, Lazy(logits), 1, logits.size(), options_.math.compare_bits,
                    ArgMaxGroup(logits.size(), static_cast<std::size_t>(options_.math.argmax_group),
                                static_cast<std::uint64_t>(options_.math.argmax_round_cost)));
  Vec one_hot = be_.Materialize(am.one_hot);
  MPCACHE_RETURN_IF_ERROR(Check());
  return one_hot;
}

template <typename P>
Result<Shares<P>> SecureLlama<P>::SampleOneHot(const Vec& logits, const Vec& noise) {
  if (noise.size() != logits.size()) {
    return InvalidArgument("sampling noise has " + std::to_string(noise.size()) +
                           " entries, the logits " + std::to_string(logits.size()));
  }
  Vec scores;
  {
    PhaseScope phase(arith().stats(), "sampling");
    scores = be_.Materialize(SamplingScores(be_, options_.math, logits, noise, options_.sampling));
    MPCACHE_RETURN_IF_ERROR(Check());
  }
  return ArgmaxOneHot(scores);
}

template <typename P>
Result<const DebugTrace*> SecureLlama<P>::Trace() const {
  if (!options_.reveal_intermediates) {
    return InvalidArgument(
        "the trace of intermediates needs a debug session with "
        "reveal_intermediates");
  }
  return &trace_;
}

template class SecureLlama<mpc::SemiHonest>;
template class SecureLlama<mpc::Spdz2k>;

}  // namespace mpcache::infer
