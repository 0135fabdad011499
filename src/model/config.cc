#include <string>

#include "model/weights.h"

namespace mpcache::model {

std::size_t ModelConfig::ParameterCount() const {
  const std::size_t d = dim, h = hidden_dim, v = vocab_size, kv = kv_dim();
  const std::size_t per_layer = 2 * d + 2 * d * d + 2 * kv * d + 3 * h * d;
  return v * d + n_layers * per_layer + d + (shared_classifier ? 0 : v * d);
}

std::string ModelConfig::Describe() const {
  return "dim " + std::to_string(dim) + ", hidden " + std::to_string(hidden_dim) + ", " +
         std::to_string(n_layers) + " layers, " + std::to_string(n_heads) + " heads, " +
         std::to_string(n_kv_heads) + " kv heads, vocab " + std::to_string(vocab_size) + ", seq " +
         std::to_string(seq_len) +
         (shared_classifier ? ", shared classifier" : ", separate classifier");
}

}  // namespace mpcache::model

namespace mpcache::model {

Status ModelConfig::Validate() const {
  // Limits far above Llama-2-70B so hostile headers cannot make sizes overflow.
  constexpr int kMaxDim = 1 << 17, kMaxLayers = 1 << 12, kMaxVocab = 1 << 22, kMaxSeq = 1 << 22;
  auto bad = [this](const std::string& what) {
    return InvalidArgument("invalid model config (" + Describe() + "): " + what);
  };
  if (dim <= 0 || dim > kMaxDim) return bad("dim must be in 1.." + std::to_string(kMaxDim));
  if (hidden_dim <= 0 || hidden_dim > 4 * kMaxDim) return bad("hidden_dim out of range");
  if (n_layers <= 0 || n_layers > kMaxLayers) return bad("n_layers out of range");
  if (n_heads <= 0 || n_heads > dim) return bad("n_heads must be in 1..dim");
  if (n_kv_heads <= 0 || n_kv_heads > n_heads) return bad("n_kv_heads must be in 1..n_heads");
  if (dim % n_heads != 0) return bad("n_heads must divide dim");
  if (n_heads % n_kv_heads != 0) return bad("n_kv_heads must divide n_heads");
  if (head_size() % 2 != 0) return bad("head size dim/n_heads must be even for RoPE");
  if (vocab_size <= 0 || vocab_size > kMaxVocab) return bad("vocab_size out of range");
  if (seq_len <= 0 || seq_len > kMaxSeq) return bad("seq_len out of range");
  if (!(rope_theta > 0.0f)) return bad("rope theta must be positive");
  if (!(norm_eps > 0.0f)) return bad("norm epsilon must be positive");
  return Status::Ok();
}

Status ModelWeights::CheckShapes() const {
  MPCACHE_RETURN_IF_ERROR(config.Validate());
  const std::size_t d = config.dim, h = config.hidden_dim, v = config.vocab_size,
                    kv = config.kv_dim();
  auto check = [](const std::vector<float>& t, std::size_t n, const std::string& name) -> Status {
    if (t.size() != n) {
      return InvalidArgument("tensor " + name + " has " + std::to_string(t.size()) +
                             " values, the config needs " + std::to_string(n));
    }
    return Status::Ok();
  };
  MPCACHE_RETURN_IF_ERROR(check(token_embedding, v * d, "token_embedding"));
  MPCACHE_RETURN_IF_ERROR(check(rms_final, d, "rms_final"));
  MPCACHE_RETURN_IF_ERROR(check(wcls, config.shared_classifier ? 0 : v * d, "wcls (classifier)"));
  if (layers.size() != static_cast<std::size_t>(config.n_layers)) {
    return InvalidArgument("model has " + std::to_string(layers.size()) +
                           " layers, the config says " + std::to_string(config.n_layers));
  }
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const LayerWeights& w = layers[l];
    const std::string p = "layers[" + std::to_string(l) + "].";
    MPCACHE_RETURN_IF_ERROR(check(w.rms_att, d, p + "rms_att"));
    MPCACHE_RETURN_IF_ERROR(check(w.wq, d * d, p + "wq"));
    MPCACHE_RETURN_IF_ERROR(check(w.wk, kv * d, p + "wk"));
    MPCACHE_RETURN_IF_ERROR(check(w.wv, kv * d, p + "wv"));
    MPCACHE_RETURN_IF_ERROR(check(w.wo, d * d, p + "wo"));
    MPCACHE_RETURN_IF_ERROR(check(w.rms_ffn, d, p + "rms_ffn"));
    MPCACHE_RETURN_IF_ERROR(check(w.w1, h * d, p + "w1"));
    MPCACHE_RETURN_IF_ERROR(check(w.w2, d * h, p + "w2"));
    MPCACHE_RETURN_IF_ERROR(check(w.w3, h * d, p + "w3"));
  }
  return Status::Ok();
}

}  // namespace mpcache::model
