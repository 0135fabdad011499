// The in-memory form of a Llama-2 model: hyper-parameters and float32 weights, laid out
// exactly as llama2.c's run.c expects (row-major, out_features x in_features), whatever
// file format they were loaded from. Every engine (float, fixed-point, secure) reads this.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace mpcache::model {

struct ModelConfig {
  int dim = 0;                    // transformer width (Llama-2-7B: 4096)
  int hidden_dim = 0;             // SwiGLU FFN width (7B: 11008)
  int n_layers = 0;               // (7B: 32)
  int n_heads = 0;                // query heads (7B: 32)
  int n_kv_heads = 0;             // key/value heads, n_kv_heads divides n_heads (grouped-query)
  int vocab_size = 0;             // (7B: 32000)
  int seq_len = 0;                // maximum context the model was trained for
  bool shared_classifier = true;  // output projection tied to the token embedding
  float rope_theta = 10000.0f;
  float norm_eps = 1e-5f;

  int head_size() const { return dim / n_heads; }
  int kv_dim() const { return head_size() * n_kv_heads; }
  int kv_group() const { return n_heads / n_kv_heads; }  // query heads per KV head
  std::size_t ParameterCount() const;
  // Checks the dimensions are positive, consistent (n_heads divides dim, n_kv_heads divides
  // n_heads, even head size) and small enough that no size computation overflows.
  Status Validate() const;
  // "dim 64, hidden 172, 5 layers, 8 heads, 4 kv heads, vocab 512, seq 512"
  std::string Describe() const;
};

struct LayerWeights {
  std::vector<float> rms_att;  // (dim)
  std::vector<float> wq;       // (dim, dim)       q = wq @ x
  std::vector<float> wk;       // (kv_dim, dim)
  std::vector<float> wv;       // (kv_dim, dim)
  std::vector<float> wo;       // (dim, dim)
  std::vector<float> rms_ffn;  // (dim)
  std::vector<float> w1;       // (hidden_dim, dim)  gate
  std::vector<float> w2;       // (dim, hidden_dim)  down
  std::vector<float> w3;       // (hidden_dim, dim)  up
};

struct ModelWeights {
  ModelConfig config;
  std::vector<float> token_embedding;  // (vocab_size, dim)
  std::vector<LayerWeights> layers;    // (n_layers)
  std::vector<float> rms_final;        // (dim)
  std::vector<float> wcls;             // (vocab_size, dim); empty when shared_classifier

  // Checks every tensor has the size the config implies (after Validate()).
  Status CheckShapes() const;

  const float* classifier() const {
    return config.shared_classifier ? token_embedding.data() : wcls.data();
  }
};

}  // namespace mpcache::model
