#include "model/sampler.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "model/float_ops.h"

namespace mpcache::model {

Sampler::Sampler(int vocab_size, SamplerOptions options)
    : vocab_size_(vocab_size), options_(options), state_(options.seed) {}

Result<Sampler> Sampler::Create(int vocab_size, SamplerOptions options) {
  if (vocab_size <= 0) return InvalidArgument("sampler: vocab_size must be positive");
  if (!(options.temperature >= 0.0f) || !std::isfinite(options.temperature)) {
    return InvalidArgument("temperature must be a finite number >= 0, got " +
                           std::to_string(options.temperature));
  }
  if (!std::isfinite(options.top_p)) return InvalidArgument("top-p must be a finite number");
  if (options.seed == 0) return InvalidArgument("seed must be non-zero");
  Sampler s(vocab_size, options);
  s.probs_.resize(static_cast<std::size_t>(vocab_size));
  return s;
}

int Sampler::Argmax(std::span<const float> values) {
  int best = 0;
  for (std::size_t i = 1; i < values.size(); ++i) {
    if (values[i] > values[static_cast<std::size_t>(best)]) best = static_cast<int>(i);
  }
  return best;
}

float Sampler::NextFloat() {
  state_ ^= state_ >> 12;
  state_ ^= state_ << 25;
  state_ ^= state_ >> 27;
  const auto u32 = static_cast<std::uint32_t>((state_ * 0x2545F4914F6CDD1Dull) >> 32);
  return static_cast<float>(u32 >> 8) / 16777216.0f;
}

int Sampler::SampleMultinomial(std::span<const float> probs, float coin) const {
  float cdf = 0.0f;
  for (std::size_t i = 0; i < probs.size(); ++i) {
    cdf += probs[i];
    if (coin < cdf) return static_cast<int>(i);
  }
  return static_cast<int>(probs.size()) - 1;  // rounding
}

int Sampler::SampleTopP(std::span<const float> probs, float coin) {
  // Tokens below (1 - top_p) / (n - 1) cannot be in the nucleus; drop them before sorting.
  const float cutoff = (1.0f - options_.top_p) / static_cast<float>(probs.size() - 1);
  candidates_.clear();
  for (std::size_t i = 0; i < probs.size(); ++i) {
    if (probs[i] >= cutoff) candidates_.emplace_back(probs[i], static_cast<int>(i));
  }
  if (candidates_.empty()) return Argmax(probs);  // NaN probabilities
  std::sort(candidates_.begin(), candidates_.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  float cumulative = 0.0f;
  std::size_t last = candidates_.size() - 1;
  for (std::size_t i = 0; i < candidates_.size(); ++i) {
    cumulative += candidates_[i].first;
    if (cumulative > options_.top_p) {
      last = i;
      break;
    }
  }
  const float r = coin * cumulative;
  float cdf = 0.0f;
  for (std::size_t i = 0; i <= last; ++i) {
    cdf += candidates_[i].first;
    if (r < cdf) return candidates_[i].second;
  }
  return candidates_[last].second;
}

int Sampler::Sample(std::span<const float> logits) {
  const std::size_t n = std::min(logits.size(), static_cast<std::size_t>(vocab_size_));
  if (n == 0) return 0;
  if (options_.temperature == 0.0f) return Argmax(logits.first(n));
  for (std::size_t i = 0; i < n; ++i) probs_[i] = logits[i] / options_.temperature;
  Softmax(probs_.data(), n);
  const float coin = NextFloat();
  const std::span<const float> probs(probs_.data(), n);
  if (options_.top_p <= 0.0f || options_.top_p >= 1.0f || n < 2) {
    return SampleMultinomial(probs, coin);
  }
  return SampleTopP(probs, coin);
}

}  // namespace mpcache::model
