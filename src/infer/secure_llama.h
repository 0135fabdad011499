// SecureLlama<P>: the Llama-2 forward pass on secret shares, one party's side. It performs
// exactly model::FixedEngine's arithmetic (model/fixed_engine.h), step by step, with the
// nonlinear kernels of common/fixed_math.h run on mpc::SecureBackend; results differ from
// the plaintext simulation only by the +-1 LSB of each probabilistic truncation.
//
// Input: the secret one-hot of the token (never opened). Output: secret logits, and the
// secret one-hot of their argmax (the next token, never opened to any party).
// Every communication is counted under a named phase of the context's CommStats:
//   embedding, norms, projections, attention (RoPE, truncations around the products),
//   kv_append (masking the new K/V rows), scores (q . k_t), softmax, mix (sum_t p_t v_t),
//   ffn, classifier_argmax, and with MPCache select (representatives, ranking, gather and
//   scatter of the selected clusters).
// Debug: with SessionOptions::debug and reveal_intermediates, the named intermediates of
// FixedEngine's Trace() ("layerL.attn_out", "layerL.ffn_out", "layerL.out", "final_norm",
// "logits") are opened to every party and decoded (refused otherwise; never in production).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/fixed_math.h"
#include "common/fixed_sampling.h"
#include "infer/kv_cache.h"
#include "infer/secure_weights.h"
#include "model/mpcache_policy.h"
#include "mpc/compare/secure_backend.h"

namespace mpcache::infer {

struct SessionOptions {
  FixedMathParams math;  // frac_bits must match the weights' encoding
  int max_seq_len = 0;   // KV cache length; 0 = the model's seq_len
  int kv_block_tokens = model::KvLayout::kDefaultBlockTokens;  // KV rows per block
  // Debug builds/configs only: allows reveal_intermediates.
  bool debug = false;
  // Open every named intermediate to all parties (destroys privacy; refused without debug).
  bool reveal_intermediates = false;
  // MPCache's dynamic selection (infer/mpcache_kv.h); none = the full cache.
  std::optional<model::MpcachePolicy> mpcache;
  // Private sampling (common/fixed_sampling.h): greedy by default; otherwise the client
  // enters T x Gumbel noise and the next token is the argmax of SamplingScores.
  SamplingParams sampling;
  // The prefill checks the MACs after a position once the openings logged since the last
  // check hold this many bytes (32 per arithmetic value, 9 per bit; the count is the same
  // at every party), so memory stays bounded by about one position's log (32 layers of the
  // 7B shape log ~1 GB per position and party). Small models never reach the default:
  // their prefill is checked with the first decoded token.
  std::size_t prefill_check_bytes = std::size_t{256} << 20;

  Status Validate() const;
};

using DebugTrace = std::map<std::string, std::vector<double>>;

template <typename P>
class SecureLlama {
 public:
  // `weights` must outlive the engine.
  static Result<std::unique_ptr<SecureLlama>> Create(mpc::BinaryContext<P>& ctx,
                                                     const SecureWeights<P>& weights,
                                                     SessionOptions options);

  // Runs the token whose secret one-hot (vocab entries) is `one_hot` at `pos` (positions in
  // order 0, 1, ...): all layers, leaving the residual stream for Logits().
  Status Forward(const mpc::Shares<P>& one_hot, int pos);
  // Final RMSNorm and classifier of the last Forward: vocab secret logits at f bits.
  Result<mpc::Shares<P>> Logits();
  // Secret one-hot of the first maximum of `logits` (vocab entries; never opened).
  Result<mpc::Shares<P>> ArgmaxOneHot(const mpc::Shares<P>& logits);
  // Secret one-hot of the sampled token: the argmax of SamplingScores(logits, noise) under
  // options().sampling (`noise`: the client's T x Gumbel draws for this position, vocab
  // entries at f bits). Phase "sampling" for the scores, then "classifier_argmax".
  Result<mpc::Shares<P>> SampleOneHot(const mpc::Shares<P>& logits, const mpc::Shares<P>& noise);

  // Debug reveals of the last Forward/Logits (refused unless reveal_intermediates).
  Result<const DebugTrace*> Trace() const;

  const model::ModelConfig& config() const { return w_.config; }
  const SessionOptions& options() const { return options_; }
  int max_seq_len() const { return cache_->max_seq_len(); }
  // The KV memory (position, layout; the bench loads a long prefill through it).
  KvMemory<P>& kv() { return *cache_; }
  // The attention triples the last Forward announced before it ran (its plan), in order.
  const std::vector<mpc::AttentionShape>& step_plan() const { return step_plan_; }
  mpc::SecureBackend<P>& backend() { return be_; }
  mpc::BinaryContext<P>& context() { return ctx_; }

 private:
  using Vec = mpc::Shares<P>;
  SecureLlama(mpc::BinaryContext<P>& ctx, const SecureWeights<P>& weights, SessionOptions options,
              std::unique_ptr<KvMemory<P>> cache);
  mpc::Context<P>& arith() { return ctx_.arith(); }
  using Lazy = typename mpc::SecureBackend<P>::Vec;  // a value whose truncation may wait
  // Products W x of several linear layers with their inputs, one round (private weights)
  // or local (public): the sums at 2f bits, outputs in order.
  Result<std::vector<Vec>> LinearSums(const std::vector<const SecureLinear<P>*>& ws,
                                      const std::vector<const Vec*>& xs);
  // The same, truncated by f. The truncation is lazy: it rides on the next exchange.
  Result<Lazy> Linear(const SecureLinear<P>& w, const Vec& x);
  Result<Vec> Embed(const Vec& one_hot);
  // RMSNorm of the residual row x by a norm's gains: with public weights the model's own
  // values (`clear`, so x g is local), else their shares.
  Vec Norm(const Lazy& x, const Vec& gain, const RingVec* clear);
  // A layer's clear gains (nullptr with private weights).
  const RingVec* ClearGain(RingVec RingLayer::*gain, int layer) const;
  // RoPE of the projection's sums (2f bits) by cos/sin at f bits: 3f bits, local.
  Vec Rope(const Vec& v, int pos) const;
  Status Check() const { return be_.status(); }
  Status Reveal(const std::string& name, const Vec& v);
  Status Reveal(const std::string& name, const Lazy& v);

  mpc::BinaryContext<P>& ctx_;
  const SecureWeights<P>& w_;
  SessionOptions options_;
  mpc::SecureBackend<P> be_;
  std::unique_ptr<KvMemory<P>> cache_;
  std::vector<mpc::AttentionShape> step_plan_;
  Lazy x_;  // residual stream after the last Forward
  DebugTrace trace_;
};

}  // namespace mpcache::infer
