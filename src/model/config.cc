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
         std::to_string(n_kv_heads) + " kv heads, vocab " + std::to_string(vocab_size) +
         ", seq " + std::to_string(seq_len) +
         (shared_classifier ? ", shared classifier" : ", separate classifier");
}

}  // namespace mpcache::model
