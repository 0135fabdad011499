// Private sampling (issue 18): temperature, top-p (nucleus) and top-k sampling of the next
// token, as one fixed-point procedure written over the fixed_math backend concept, so the
// secure engine and the plaintext twin (PlainBackend) run the very same operations.
//
// Randomness is the client's: it draws Gumbel noise g_i = -ln(-ln u_i) per vocabulary entry
// from its own AES-CTR stream (SamplingNoise, seeded by --seed or the OS), scales it by the
// temperature T and enters n_i = round(T g_i 2^f) through dealer masks like its prompt. The
// parties never see a draw. The Gumbel-max trick then makes sampling an argmax:
//
//   token = argmax_i ( l_i + n_i )     ~  softmax(l / T)            (exact for exact logits)
//
// and the argmax is the greedy engine's (a secret one-hot, never opened). Top-p / top-k
// restrict the argmax to the nucleus {i : q_i >= t*}, q = Softmax(l / T) at f bits, with
// t* the largest threshold (bit by bit from 2^f down to 1: f + 1 steps) such that
//
//   mass(t) = sum_{q_i >= t} q_i  >  top_p        or        count(t) = #{q_i >= t} >= top_k
//
// (either limit alone when the other is off; both: the intersection of the two sets). For
// top-p this is llama2.c's nucleus (the smallest prefix of the sorted probabilities whose
// mass exceeds top_p), for top-k the k most likely tokens (ties at the threshold all kept).
// Tokens outside the nucleus get their score lowered by kSamplingExclusion (2^16 in real
// units, far beyond any logit + noise), so the argmax never picks one.
//
// Cost per sampled token, on top of greedy's argmax (V = vocabulary size, f frac bits):
//   temperature only (top_p = 1, top_k = 0): 0 rounds; the client's V masked values.
//   with top-p / top-k: 1 Trunc(V) (T != 1) + Softmax(1 x V) + (f + 1) x [IsNegative(V,
//   f + 3) + Mul(V) (top-p only) + IsNegative(1 or 2) + Mul(1) (both limits only)] +
//   IsNegative(V, f + 3). docs/secure-llama.md lists the measured figures.
//
// What the parties learn: the public parameters (T, top_p, top_k), never a draw or a token.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/fixed_math.h"
#include "common/prg.h"
#include "common/result.h"

namespace mpcache {

struct SamplingParams {
  double temperature = 0;  // 0: greedy; else in [kMinTemperature, kMaxTemperature]
  double top_p = 1;        // nucleus mass in (0, 1]; 1: off
  int top_k = 0;           // 0: off; else 1 .. vocab

  static constexpr double kMinTemperature = 0.01;
  static constexpr double kMaxTemperature = 100;

  bool Greedy() const { return temperature == 0; }
  // Whether the nucleus (top-p / top-k) restricts the draw: needs the probabilities.
  bool Truncates() const { return !Greedy() && (top_p < 1 || top_k > 0); }
  // Refuses values outside the ranges above, naming the flag and its valid range.
  Status Validate(int vocab_size) const;
  std::string Describe() const;  // "greedy" | "temperature 0.8, top-p 0.9, top-k 40"
};

// Real-unit penalty of the tokens outside the nucleus.
inline constexpr double kSamplingExclusion = 65536.0;

// The client's sampling randomness: Gumbel noise scaled by the temperature, encoded at f
// fractional bits, one vocabulary-sized vector per sampled position, in order.
class SamplingNoise {
 public:
  // `seed`: the user's --seed (reproducible runs), or a draw from the OS.
  SamplingNoise(std::uint64_t seed, double temperature, int frac_bits);
  // T x Gumbel(0, 1) per entry: u from 53 random bits in (0, 1), g = -ln(-ln u).
  std::vector<Ring64> Next(std::size_t vocab);

 private:
  Prg prg_;
  double temperature_;
  int frac_bits_;
};

// The plaintext twin's pick of the next token from ring logits (f bits): greedy's first
// maximum, or the argmax of SamplingScores with the next `logits.size()` values of `noise`
// (PlainBackend, exact truncation). Greedy draws nothing from `noise`.
int PlainSample(const FixedMathParams& p, const std::vector<Ring64>& logits, SamplingNoise& noise,
                const SamplingParams& s);

// A random 64-bit seed from the OS (the default when no --seed is given).
Result<std::uint64_t> RandomSamplingSeed();

// First maximum of signed ring values (the plaintext twin of the secure argmax).
int RingArgmax(std::span<const Ring64> values);

// The scores whose argmax is the sampled token: logits + noise, minus kSamplingExclusion
// outside the nucleus when top-p / top-k is on. `logits` and `noise` hold V values at f bits.
template <typename B>
typename B::Vec SamplingScores(B& be, const FixedMathParams& p, const typename B::Vec& logits,
                               const typename B::Vec& noise, const SamplingParams& s) {
  using Vec = typename B::Vec;
  const int f = p.frac_bits;
  Vec scores = be.Add(logits, noise);
  if (!s.Truncates()) return scores;
  const std::size_t v = B::Size(logits);
  // q = Softmax(logits / T) at f bits.
  Vec z = logits;
  if (s.temperature != 1) {
    const FixedPoint fp{f};
    z = be.Trunc(be.MulConst(logits, fp.Encode(1.0 / s.temperature)), f);
  }
  const Vec q = Softmax(be, p, z, 1, v);
  const std::vector<std::size_t> first(1, 0), bcast(v, 0);
  // q_i - t and mass - top_p stay below 2^(f+2) in magnitude (q_i <= 2^f plus rounding),
  // (k - 1) - count below 2 V.
  int bits = f + 3;
  while ((std::size_t{1} << (bits - 2)) <= v) ++bits;
  const bool by_mass = s.top_p<1, by_count = s.top_k> 0;
  const Ring64 mass_limit = FixedPoint{f}.Encode(s.top_p);
  Vec t = be.MulConst(be.Gather(q, first), 0);       // secret 0
  const auto at_least = [&](const Vec& threshold) {  // 1 where q_i >= threshold
    const Vec below = be.IsNegative(be.Sub(q, be.Gather(threshold, bcast)), bits);
    return be.AddConst(be.MulConst(below, ~Ring64{0}), 1);
  };
  for (int j = f; j >= 0; --j) {
    const Vec cand = be.AddConst(t, Ring64{1} << j);
    const Vec in = at_least(cand);
    // Conditions as negatives: top_p - mass < 0 (mass > top_p), (k - 1) - count < 0.
    Vec conds;
    if (by_mass) {
      const Vec mass = be.RowSum(be.Mul(in, q), v);
      conds = be.AddConst(be.MulConst(mass, ~Ring64{0}), mass_limit);
    }
    if (by_count) {
      const Vec count = be.RowSum(in, v);
      const Vec c = be.AddConst(be.MulConst(count, ~Ring64{0}), static_cast<Ring64>(s.top_k - 1));
      conds = by_mass ? be.Concat(conds, c) : c;
    }
    const Vec met = be.IsNegative(conds, bits);
    Vec keep = be.Gather(met, first);
    if (by_mass && by_count) {
      // a OR b = a + b - a b
      const Vec b = be.Gather(met, std::vector<std::size_t>{1});
      keep = be.Sub(be.Add(keep, b), be.Mul(keep, b));
    }
    t = be.Add(t, be.MulConst(keep, Ring64{1} << j));
  }
  const Vec in = at_least(t);
  // scores += (in - 1) x exclusion: 0 inside the nucleus, -exclusion outside.
  const Ring64 exclusion = FixedPoint{f}.Encode(kSamplingExclusion);
  return be.Add(scores, be.MulConst(be.AddConst(in, ~Ring64{0}), exclusion));
}

}  // namespace mpcache
