// The plaintext fixed-point simulation of the Llama-2 forward pass over Z_2^64: exactly the
// arithmetic the secure engine performs (docs/fixed-point.md), so every secure intermediate
// can be compared with it, and it with the float reference.
//
// Per layer (x: residual stream, all values ring encodings at f fractional bits):
//   xb  = RmsNorm(x, rms_att)                                    fixed_math RmsNorm
//   q,k,v = Trunc_f(W x)      (dot products summed at 2f bits, one truncation per output)
//   q,k = RoPE: Trunc_f(a cos - b sin), Trunc_f(a sin + b cos)  (public cos/sin at f bits)
//   s_t = Trunc_f(Trunc_f(q . k_t) * enc_f(1/sqrt(head_size)))  for t <= pos
//   p   = Softmax(s) per head                                    fixed_math Softmax
//   o   = Trunc_f(sum_t p_t v_t);  x += Trunc_f(wo o)            ("layerL.attn_out")
//   xb  = RmsNorm(x, rms_ffn); h1 = Trunc_f(w1 xb); h3 = Trunc_f(w3 xb)
//   g   = MulTrunc_f(Silu(h1), h3); x += Trunc_f(w2 g)           ("layerL.ffn_out")
// then RmsNorm(x, rms_final) ("final_norm") and logits = Trunc_f(wcls x) ("logits").
// Greedy decoding takes the argmax of the signed ring logits (lowest index on ties).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/fixed_math.h"
#include "common/result.h"
#include "model/compact_model.h"
#include "model/kv_layout.h"
#include "model/mpcache_policy.h"
#include "model/weights.h"

namespace mpcache::model {

struct FixedEngineOptions {
  FixedMathParams math;  // frac_bits (default 16) and kernel parameters
  int max_seq_len = 0;   // KV cache length; 0 = the model's seq_len
  // Record decoded named intermediates of the last Forward (Trace()).
  bool record = false;
  // Record min/max of the activations nonlinear kernels see (Ranges()).
  bool collect_ranges = false;
  // Add a pseudo-random 0/1 LSB after every truncation, as the secure truncation may.
  std::optional<std::uint64_t> noisy_trunc_seed;
  int kv_block_tokens = KvLayout::kDefaultBlockTokens;  // KV rows per block (kv_layout.h)
  // MPCache's dynamic selection (model/mpcache_policy.h); none = the full cache.
  std::optional<MpcachePolicy> mpcache;
  // Worker threads for the compact matrices' products (model/compact_kernels.h).
  int threads = 1;
};

// Min/max of a quantity over all positions seen.
struct Range {
  double min = 0, max = 0;
  std::uint64_t count = 0;
  void Add(double v);
};

// What the nonlinear kernels see, measured over a run (decoded from the fixed-point values).
struct ActivationRanges {
  Range rms_mean_square;      // mean(x^2) at every RMSNorm input (before eps)
  Range attn_scores;          // scaled scores q.k/sqrt(hs), before max subtraction
  Range attn_shifted;         // scores - row max (exp inputs)
  Range softmax_denominator;  // sum_t exp(s_t - max)
  Range ffn_gate;             // SiLU inputs (w1 xb)
  Range residual;             // residual stream values after each layer
  Range logits;
};

class FixedEngine {
 public:
  // Encodes the weights (they need not outlive the engine) and allocates the KV cache.
  static Result<FixedEngine> Create(const ModelWeights& weights, FixedEngineOptions options = {});
  // The compact weights' twin (model/compact_model.h): products straight from the mapped
  // Q8_0/F16 integers (W x at f + 24 bits, one truncation by 24 per output), the embedding
  // row truncated by 24 - f bits — exactly what the secure engine computes on shares with a
  // compact model. The gains are encoded at f bits as usual.
  static Result<FixedEngine> Create(std::shared_ptr<const CompactModel> model,
                                    FixedEngineOptions options = {});

  // Runs `token` at `pos` (positions fed in order 0, 1, ...: pos must be the KV memory's
  // position()); returns the decoded logits, valid until the next call.
  Result<std::span<const double>> Forward(int token, int pos);
  // Ring logits of the last Forward and their greedy argmax.
  std::span<const Ring64> RingLogits() const { return logits_ring_; }
  int Argmax() const;

  const ModelConfig& config() const { return config_; }
  const FixedEngineOptions& options() const { return options_; }
  const std::map<std::string, std::vector<double>>& Trace() const { return trace_; }
  const ActivationRanges& Ranges() const { return ranges_; }
  // Operations of the nonlinear kernels and truncations so far (see fixed_math.h).
  const FixedOpCounts& Counts() const { return math_.backend().counts(); }
  const KvLayout& kv_layout() const { return kv_->layout(); }
  // The cached (roped) keys and values, in the layout's blocks.
  const PlainKvCache<Ring64>& kv_cache() const { return *kv_; }
  // The prompt's length, before its first position: with MPCache's static eviction
  // (mpcache_policy.h EvictionFor) the last queries of the prompt score the cached tokens.
  Status BeginPrompt(int prompt_len);
  // End of the prefill (the KV policy's hook; see kv_layout.h): with static eviction each
  // layer keeps its sink, its most important candidates and the window, the rest is gone.
  Status EndPrefill(int window);
  // The positions each layer attended in the last Forward (every position with the full
  // cache; the policy's selection with MPCache).
  const std::vector<std::vector<int>>& Attended() const { return attended_; }
  // The prompt positions each layer kept at the static eviction (KeptRows' order; empty
  // when nothing was evicted).
  const std::vector<std::vector<int>>& Kept() const { return kept_; }

 private:
  FixedEngine(const ModelConfig& config, FixedEngineOptions options);
  using Vec = std::vector<Ring64>;
  // Trunc_f(W x) of the wide encodings `w`, or Trunc_24(W x) of `compact` when given.
  Vec MatVec(const Vec& w, const Vec& x, std::size_t rows, std::size_t cols,
             const CompactMatrix* compact = nullptr);
  // W x at 2f bits, not truncated (compact: the sums brought from f + 24 to 2f bits).
  Vec MatVecRaw(const Vec& w, const Vec& x, std::size_t rows, std::size_t cols,
                const CompactMatrix* compact = nullptr);
  Status Allocate();
  Vec Norm(const Vec& x, const Vec& g);
  void Record(const std::string& name, const Vec& v);
  void RecordMeanSquare(const Vec& x);
  // MPCache: the positions `layer` attends with query q (its representatives kept up to
  // date first).
  std::vector<int> Select(int layer, const Vec& q);
  // MPCache's residual path: the m virtual tokens' raw scores (n_heads x m, head-major) of
  // `layer` at this step (the skipped clusters' mean keys; model/mpcache_policy.h), their
  // means kept up to date first.
  Vec ResidualScores(int layer, const Vec& q, const SelectionShape& shape);

  struct EncodedLayer {
    Vec rms_att, wq, wk, wv, wo, rms_ffn, w1, w2, w3;
  };
  ModelConfig config_;
  FixedEngineOptions options_;
  FixedPoint fp_;
  FixedMath math_;
  int max_seq_len_ = 0;
  Vec embedding_, rms_final_, wcls_;  // wcls_ empty when shared
  std::vector<EncodedLayer> layers_;  // matrices empty with a compact model
  std::shared_ptr<const CompactModel> compact_;
  std::optional<PlainKvCache<Ring64>> kv_;
  std::vector<std::vector<Vec>> reps_;     // [layer][cluster] representatives (MPCache)
  std::optional<EvictionShape> eviction_;  // set by BeginPrompt when the policy evicts
  std::vector<Vec> importance_;            // [layer][row] scores of the static eviction
  std::vector<std::vector<int>> kept_;     // [layer] positions kept by the eviction
  std::vector<Vec> impact_;                // [layer][kept row] impact re-weighting's raw bias
  std::vector<std::vector<int>> attended_;
  std::vector<std::vector<int>> picked_;  // [layer] level-1 selection of this step (MPCache)
  Vec blend_;              // the last selecting layer's own cluster scores (score reuse)
  int blend_length_ = -1;  // ... at this many cached rows
  std::vector<std::vector<Vec>> means_;  // [layer][cluster] [mean key | mean value]
  Vec logits_ring_;
  std::vector<double> logits_;
  std::map<std::string, std::vector<double>> trace_;
  ActivationRanges ranges_;
};

// Max |fixed - float| per named intermediate, accumulated over steps.
struct NamedError {
  std::string name;
  double max_abs_error = 0;
};

class FloatEngine;

// Runs one step on both engines (same token and position) and folds the errors of
// "layerL.out" (residual after layer L), "final_norm" and "logits" into `errors` (created
// on first use, in that order). The float engine needs record_layer_outputs, the fixed one
// record. Returns the float logits (valid until the float engine's next Forward).
Result<std::span<const float>> CompareStep(FloatEngine& float_engine, FixedEngine& fixed_engine,
                                           int token, int pos, std::vector<NamedError>& errors);

// Index of the largest value (lowest index on ties) and the gap to the runner-up.
struct Top2 {
  int index = 0;
  double margin = 0;
};
Top2 TopTwo(std::span<const float> logits);

}  // namespace mpcache::model
