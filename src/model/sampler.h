// Next-token sampling as llama2.c's sample(): greedy argmax at temperature 0; otherwise
// softmax(logits / temperature) and, when 0 < top_p < 1, nucleus (top-p) sampling, else
// plain multinomial sampling. Randomness: llama2.c's xorshift64* generator seeded with
// `seed`, so for the same seed and logits the draws equal llama2.c's `run -s seed`.
// (Not cryptographic: sampling is plaintext-side; the secure engine brings its own.)
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/result.h"

namespace mpcache::model {

struct SamplerOptions {
  float temperature = 0.0f;  // 0 = greedy
  float top_p = 0.9f;        // nucleus threshold; <= 0 or >= 1 disables top-p
  std::uint64_t seed = 42;   // must be non-zero (xorshift state)
};

class Sampler {
 public:
  static Result<Sampler> Create(int vocab_size, SamplerOptions options);

  // Picks the next token id from `logits` (vocab_size values). `logits` is not modified.
  int Sample(std::span<const float> logits);

  // Building blocks (exposed for tests and for the secure engine's plaintext checks).
  static int Argmax(std::span<const float> values);  // first maximum
  float NextFloat();                                 // llama2.c random_f32: [0, 1)

 private:
  Sampler(int vocab_size, SamplerOptions options);
  int SampleMultinomial(std::span<const float> probs, float coin) const;
  int SampleTopP(std::span<const float> probs, float coin);

  int vocab_size_;
  SamplerOptions options_;
  std::uint64_t state_;
  std::vector<float> probs_;
  std::vector<std::pair<float, int>> candidates_;
};

}  // namespace mpcache::model
