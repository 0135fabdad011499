#include "common/fixed_sampling.h"

#include <cmath>
#include <cstring>
#include <sstream>

namespace mpcache {

Status SamplingParams::Validate(int vocab_size) const {
  if (!(temperature == 0 || (temperature >= kMinTemperature && temperature <= kMaxTemperature))) {
    std::ostringstream o;
    o << "--temperature " << temperature << " is out of range: 0 (greedy) or " << kMinTemperature
      << " .. " << kMaxTemperature;
    return InvalidArgument(o.str());
  }
  if (!(top_p > 0 && top_p <= 1)) {
    std::ostringstream o;
    o << "--top-p " << top_p << " is out of range: a nucleus mass in (0, 1] (1 = off)";
    return InvalidArgument(o.str());
  }
  if (top_k < 0 || top_k > vocab_size) {
    return InvalidArgument("--top-k " + std::to_string(top_k) + " is out of range: 0 (off) .. " +
                           std::to_string(vocab_size) + " (the vocabulary size)");
  }
  return Status::Ok();
}

std::string SamplingParams::Describe() const {
  if (Greedy()) return "greedy";
  std::ostringstream o;
  o << "temperature " << temperature;
  if (top_p < 1) o << ", top-p " << top_p;
  if (top_k > 0) o << ", top-k " << top_k;
  return o.str();
}

namespace {

Seed SeedFromUser(std::uint64_t seed) {
  // The user's 64-bit seed, expanded under a label of its own (not a test seed).
  Seed s{};
  std::memcpy(s.data(), &seed, sizeof seed);
  const char label[] = "sampling";
  std::memcpy(s.data() + 8, label, 8);
  return DeriveSeed(s, 0x5A3D1E);
}

}  // namespace

SamplingNoise::SamplingNoise(std::uint64_t seed, double temperature, int frac_bits)
    : prg_(SeedFromUser(seed)), temperature_(temperature), frac_bits_(frac_bits) {}

std::vector<Ring64> SamplingNoise::Next(std::size_t vocab) {
  const FixedPoint fp{frac_bits_};
  std::vector<Ring64> out(vocab);
  for (std::size_t i = 0; i < vocab; ++i) {
    // u in (0, 1): (x + 1/2) / 2^53, never 0 or 1.
    const double u = (static_cast<double>(prg_.NextU64() >> 11) + 0.5) * 0x1.0p-53;
    const double g = -std::log(-std::log(u));
    out[i] = fp.Encode(temperature_ * g);
  }
  return out;
}

Result<std::uint64_t> RandomSamplingSeed() {
  MPCACHE_ASSIGN_OR_RETURN(Seed s, OsSeed());
  std::uint64_t v = 0;
  std::memcpy(&v, s.data(), sizeof v);
  return v;
}

int PlainSample(const FixedMathParams& p, const std::vector<Ring64>& logits, SamplingNoise& noise,
                const SamplingParams& s) {
  if (s.Greedy()) return RingArgmax(logits);
  PlainBackend be;
  return RingArgmax(SamplingScores(be, p, logits, noise.Next(logits.size()), s));
}

int RingArgmax(std::span<const Ring64> values) {
  int best = 0;
  for (std::size_t i = 1; i < values.size(); ++i) {
    if (static_cast<std::int64_t>(values[i]) >
        static_cast<std::int64_t>(values[static_cast<std::size_t>(best)])) {
      best = static_cast<int>(i);
    }
  }
  return best;
}

}  // namespace mpcache
