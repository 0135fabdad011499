// The plaintext float32 reference engine: llama2.c's forward() over ModelWeights, with a
// KV cache. One engine instance holds one sequence's state; it keeps a reference to the
// weights, which must outlive it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "common/result.h"
#include "model/kv_layout.h"
#include "model/parallel.h"
#include "model/weights.h"

namespace mpcache::model {

struct FloatEngineOptions {
  // KV cache length (maximum position + 1); 0 = the model's seq_len.
  int max_seq_len = 0;
  // Keep a copy of the residual stream after every layer (for fixed-point comparisons).
  bool record_layer_outputs = false;
  // Threads for the matrix-vector products (1 = the calling thread only). Logits are
  // bit-identical for any thread count.
  int threads = 1;
  int kv_block_tokens = KvLayout::kDefaultBlockTokens;  // KV rows per block (kv_layout.h)
};

class FloatEngine {
 public:
  // Checks the weights' shapes; allocates the KV cache.
  static Result<FloatEngine> Create(const ModelWeights& weights, FloatEngineOptions options = {});

  // Runs token `token` at position `pos` (0-based; positions must be fed in order
  // 0, 1, 2, ...: pos must be the KV memory's position()). Returns the vocab_size logits,
  // valid until the next call. Errors: token out of range, pos >= max_seq_len.
  Result<std::span<const float>> Forward(int token, int pos);

  const ModelConfig& config() const { return weights_->config; }
  int max_seq_len() const { return max_seq_len_; }
  // After Forward with record_layer_outputs: the residual stream x after layer l (dim
  // values), and the final-normed x fed to the classifier.
  std::span<const float> LayerOutput(int layer) const;
  std::span<const float> FinalNormed() const { return xb_final_; }
  const KvLayout& kv_layout() const { return kv_->layout(); }
  // End of the prefill (the KV policy's hook; see kv_layout.h).
  Status EndPrefill(int window) { return kv_->layout().EndPrefill(window); }

 private:
  FloatEngine(const ModelWeights& weights, FloatEngineOptions options);
  // out = W x, W (d x n); split by rows over the pool when large enough to pay off.
  void Mat(float* out, const float* x, const float* w, std::size_t n, std::size_t d);

  const ModelWeights* weights_;
  FloatEngineOptions options_;
  int max_seq_len_ = 0;
  std::vector<float> x_, xb_, xb2_, hb_, hb2_, q_, k_, v_, att_, logits_, xb_final_;
  std::vector<float> rope_cos_, rope_sin_;
  std::optional<PlainKvCache<float>> kv_;
  std::vector<float> layer_outputs_;   // (layer, dim) if recorded
  std::unique_ptr<ParallelFor> pool_;  // null when single-threaded
};

}  // namespace mpcache::model
