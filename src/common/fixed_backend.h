// The arithmetic backend of the fixed-point kernels (common/fixed_math.h and the headers it
// includes), their parameters, and the plaintext backend. The kernels over Z_2^64 are
// written once as templates over a backend so that the plaintext simulation (PlainBackend
// below) and the secure engine run the *same* sequence of operations. A backend provides
// only what MPC can do:
//
//   using Vec = ...;                         // a batch of ring elements (plain or shared)
//   std::size_t Size(const Vec&)
//   Vec Add(const Vec&, const Vec&)          // local
//   Vec Sub(const Vec&, const Vec&)          // local
//   Vec AddConst(const Vec&, Ring64 c)       // local: + public c (raw ring element)
//   Vec MulConst(const Vec&, Ring64 c)       // local: * public c (raw ring product)
//   Vec MulPublic(const Vec&, std::span<const Ring64> c)  // local: elementwise * public c_i
//   Vec Trunc(const Vec&, int bits)          // arithmetic shift right (secure: may be +1 LSB)
//   Vec Mul(const Vec&, const Vec&)          // secret x secret, raw ring product (one round)
//   Vec Square(const Vec&)                   // Mul(a, a), one opening per element
//   Vec MulAndSquare(const Vec& a, const Vec& b, const Vec& c)  // [a b | c^2]: ONE batch,
//                                            // the squares opening c once per element
//   Vec MulTrunc(const Vec&, const Vec&, int bits)  // secret x secret, then Trunc (one round)
//   Vec MulPairs(const Vec& a, const Vec& b, std::size_t from, std::size_t count, int bits)
//                                            // Mul (bits 0) or MulTrunc, where the caller
//                                            // declares b[from + count + k] == b[from + k]
//                                            // (k < count): the secure engine opens each
//                                            // such right operand once for both products
//   Vec IsNegative(const Vec&, int bits)     // 1 if the value, read as a signed `bits`-bit
//                                            // number, is < 0 (bit bits-1), else 0: exact
//                                            // sign for |x| < 2^(bits-1). One secure
//                                            // comparison per element, one batch; fewer bits
//                                            // are cheaper (mpc/compare/compare.h)
//   Vec IsNegativeEach(const Vec& a, std::span<const Ring64> c, int bits)
//                                            // IsNegative(a_r + c_i) at i * Size(a) + r:
//                                            // one batch of c.size() * Size(a) comparisons
//                                            // (a against many thresholds; the secure
//                                            // engine handles a's pending terms once)
//   Vec Gather(const Vec&, std::span<const std::size_t> idx)  // local: out[i] = a[idx[i]]
//   Vec Concat(const Vec&, const Vec&)       // local
//   Vec RowSum(const Vec&, std::size_t cols) // local: sums of consecutive groups of `cols`
//   Vec GatherSum(const Vec&, const SparseRows& m)  // local: out[r] = sum of coef_k a[idx_k]
//                                            // over row r's terms (a public sparse matrix
//                                            // times a: Gather, MulPublic and RowSum in one)
//
// Every call of Mul/Square/MulTrunc/IsNegative is one batch (one communication round, an
// IsNegative several, in the secure engine); Trunc costs no round of its own there (it rides
// on the next product, comparison or exchange: mpc/lazy_shares.h), and the kernels are
// written so that independent products share a batch and truncations feed products.
// docs/fixed-point.md states each kernel's algorithm, error bound and exact op counts; the
// PlainBackend counts them so tests can assert the costs.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "common/fixed_point.h"
#include "common/prg.h"
#include "common/result.h"

namespace mpcache {

inline constexpr int kRecommendedFracBits = kDefaultFracBits;

// Whether an IsNegative of `bits`-bit values takes a pending truncation by `shift` (times an
// odd coefficient: an even one of 2^v lowers the shift by v) into its own opening instead
// of opening the truncation first, one round earlier. The truncation's wrap term is a
// multiple of 2^(63 - shift), which vanishes mod 2^bits when 63 - shift >= bits
// (mpc/compare/secure_backend.cc). Kernels read it to size comparisons that take their
// operands' truncations in (RmsNorm's rsqrt, fixed_inverse.h).
constexpr bool ComparisonTakesInTruncation(int shift, int bits) {
  return 63 - shift >= bits;
}

// The largest round price (FixedMathParams' rank/argmax/silu_round_cost, in comparisons per
// round): rounds x price stays far inside 64 bits.
inline constexpr int kMaxRoundCost = 1 << 24;

// Parameters of the kernels. All precisions are fractional bits of ring encodings; every
// intermediate product stays below 2^61 in magnitude inside the stated input domains.
struct FixedMathParams {
  // f: inputs and outputs of every kernel. 18, not common/fixed_point.h's 16: on stories260K
  // f = 16 leaves one greedy step where margin < 2 * logit error (docs/fixed-point.md).
  int frac_bits = kRecommendedFracBits;
  // exp(x), x <= 0: exp(x) = 0 for x < -exp_clip, else (1 + z + z^2/2 + z^3/6 + z^4/24)^(2^n)
  // with z = x / 2^n (|z| <= 1: needs exp_clip <= 2^n).
  int exp_squarings = 4;   // n
  int exp_clip = 16;       // integer threshold; exp(-16) = 1.1e-7
  int exp_frac_bits = 24;  // internal precision; needs f + n <= exp_frac_bits <= 25
  // 1/d, d in [1, 2^k] (k given per call): recip_sub_buckets buckets per power of two
  // (k * S - 1 comparisons), the minimax linear start of each bucket (relative error
  // 9.4e-4 for S = 8), then Newton iterations (the error squares each time).
  int recip_sub_buckets = 8;
  int recip_iterations = 1;
  int recip_frac_bits = 30;  // internal precision of the Newton iterations (<= 30)
  // sigmoid and SiLU take 1/(1 + e), e in (0, 1], from one linear start on [1, 2] (relative
  // error 1/17, no comparison) and this many Newton iterations.
  int sigmoid_recip_iterations = 2;
  // 1/sqrt(v), v in [2^rsqrt_log2_min, 2^rsqrt_log2_max]: same bucketing (S per power of
  // two; relative error of the start 3.5e-4 for S = 8), Newton steps.
  int rsqrt_log2_min = -12;
  int rsqrt_log2_max = 14;
  int rsqrt_sub_buckets = 8;
  int rsqrt_iterations = 1;
  // Width of the comparisons whose operands the kernels cannot bound from their own
  // parameters (exp's clipping, sigmoid's sign, softmax's row max, argmax): exact while
  // |x| < 2^(compare_bits - 1), i.e. |x| < 2^21 = 2M at f = 18. The bucket comparisons of
  // reciprocal and rsqrt take exactly the width their domain needs.
  int compare_bits = 40;
  // Softmax's row max (RowMaxRank): candidates ranked in groups of up to this many per level
  // (2..64), LtzRounds(compare_bits) + LtzRounds(8) + 1 rounds per level, g (g - 1) / 2
  // comparisons per group of g; each row takes the group of at most this many with the
  // fewest rounds, then the fewest comparisons (RankGroup in fixed_math.h). 24 keeps the
  // dealer's comparison tuples near those of plain groups of 16 (one ranking level up to 24
  // columns, two ending in a pair level up to 48).
  int softmax_max_group = 24;
  // What one round of the row max is worth in comparisons (RankGroup weighs rounds x this
  // against the batch's rows x pairs): ~a 40 ms round trip over the ~10 us a 40-bit
  // comparison costs a party here (docs/tuning.md's fit), so a batch of up to 111 rows of up
  // to 24 columns keeps their one level, and a 7B decode at 4 096 positions (32 rows)
  // compares 4 095 pairs per row where the fewest rounds took 32 760. 0: the fewest rounds,
  // then pairs.
  int rank_round_cost = 4096;
  // The classifier's argmax (RowArgMaxRank, the one-hot of the first maximum logit): the same
  // choice with groups of up to this many (2..64). 8 holds the dealer's comparison tuples to
  // about 4 per logit: a vocabulary of 512 takes three levels of 8 (18 rounds, 2 044 pairs;
  // groups of 23 would save 6 rounds for 5 698 pairs, and a party whose dealer link runs at
  // 50 Mbit/s then stalls its peers past their receive timeout), 32 000 five levels (30 rounds,
  // 128 K pairs; the 4-ary tournament took 39 rounds for about 64 K).
  int argmax_group = 8;
  // What one round of the classifier's argmax is worth in comparisons (ArgMaxGroup in
  // fixed_math.h: the fewest-round tournament above or pairs with the one-hot top down,
  // whichever has the fewest argmax_round_cost x rounds + pairs; 0: always the former). A
  // 40-bit comparison costs each party ~10 us here and, in malicious mode, the dealer ~13 us
  // and ~2.4 KB of corrections to one party: 1024 of them ~20 ms of this two-core machine, a
  // round trip between nearby sites. So a vocabulary of 512 keeps three levels of 8 (18
  // rounds, 2 044 pairs; pairs would take 44 rounds), and one of 32 000 takes pairs (31 999
  // in 74 rounds, where groups of 8 compared 128 K in 34: seconds of comparison work per
  // token against milliseconds of rounds on a LAN).
  int argmax_round_cost = 1024;
  // What one round of sigmoid's and SiLU's comparisons is worth in comparisons (SigmoidSignFirst
  // in fixed_activations.h). One batch of 3 per element ([x < 0], [x < -clip], [x > clip]) or
  // [x < 0] first, then [clip - |x| < 0] from s x: LtzRounds(compare_bits) = 3 rounds more for
  // a third of the comparison tuples less. n elements take the latter when n > 3 x this (0:
  // always the one batch). At the default the 7B FFN's 11 008 elements per layer drop 11 008
  // comparisons (~0.25 s of the dealer's and the parties' CPU here, 25 MB of corrections) for
  // 3 rounds; stories260K's 172 keep the single batch.
  int silu_round_cost = 1024;

  Status Validate() const;
  // Internal precision of rsqrt (depends on the domain's lower end so y^2 fits).
  int RsqrtFracBits() const;
  // Precision of the public constants 1/6 and 1/24 in exp's polynomial: z^2 (1/2 + z/6 +
  // z^2/24) stays below 0.71 * 2^(2 fe + bits) < 2^62 for |z| <= 1.
  int ExpCoefBits() const { return 62 - 2 * exp_frac_bits; }
};

// Operation counts (per call of a kernel, summed over calls).
struct FixedOpCounts {
  std::uint64_t mul_batches = 0;    // Mul/MulTrunc calls (rounds of secret products)
  std::uint64_t mul_elems = 0;      // secret x secret products
  std::uint64_t trunc_batches = 0;  // standalone Trunc calls
  std::uint64_t trunc_elems = 0;    // standalone truncations (not counting MulTrunc's)
  std::uint64_t cmp_batches = 0;    // IsNegative calls
  std::uint64_t cmp_elems = 0;      // secure comparisons
  FixedOpCounts& operator+=(const FixedOpCounts& o);
};

// The rows of a public sparse matrix (GatherSum): row r holds the terms [off[r], off[r+1]) of
// (idx, coef), a term's coefficient a raw ring element (0 - 1 subtracts).
struct SparseRows {
  std::vector<std::size_t> off{0};
  std::vector<std::size_t> idx;
  std::vector<Ring64> coef;
  void Add(std::size_t i, Ring64 c) {
    idx.push_back(i);
    coef.push_back(c);
  }
  void EndRow() { off.push_back(idx.size()); }
  // Room for `rows` more rows of `entries` entries in all (no regrowth while they are added).
  void Reserve(std::size_t rows, std::size_t entries) {
    off.reserve(off.size() + rows);
    idx.reserve(idx.size() + entries);
    coef.reserve(coef.size() + entries);
  }
  std::size_t rows() const { return off.size() - 1; }
};

// Plaintext backend: the exact arithmetic the secure engine mirrors. Optionally adds a
// pseudo-random 0/1 LSB after every truncation, like the secure probabilistic truncation.
class PlainBackend {
 public:
  using Vec = std::vector<Ring64>;
  PlainBackend() = default;
  // Truncations add a PRG bit (seeded, reproducible) when `noisy_trunc_seed` is given.
  explicit PlainBackend(std::uint64_t noisy_trunc_seed);

  static std::size_t Size(const Vec& a) { return a.size(); }
  Vec Add(const Vec& a, const Vec& b) const;
  Vec Sub(const Vec& a, const Vec& b) const;
  Vec AddConst(const Vec& a, Ring64 c) const;
  Vec MulConst(const Vec& a, Ring64 c) const;
  Vec MulPublic(const Vec& a, std::span<const Ring64> c) const;
  Vec Trunc(const Vec& a, int bits);
  Vec Mul(const Vec& a, const Vec& b);
  Vec Square(const Vec& a);
  Vec MulAndSquare(const Vec& a, const Vec& b, const Vec& c);
  Vec MulTrunc(const Vec& a, const Vec& b, int bits);
  Vec MulPairs(const Vec& a, const Vec& b, std::size_t from, std::size_t count, int bits = 0);
  Vec IsNegative(const Vec& a, int bits);
  Vec IsNegativeEach(const Vec& a, std::span<const Ring64> c, int bits);
  Vec Gather(const Vec& a, std::span<const std::size_t> idx) const;
  Vec Concat(const Vec& a, const Vec& b) const;
  Vec RowSum(const Vec& a, std::size_t cols) const;
  Vec GatherSum(const Vec& a, const SparseRows& m) const;

  const FixedOpCounts& counts() const { return counts_; }
  void ResetCounts() { counts_ = {}; }

 private:
  Ring64 TruncOne(Ring64 v, int bits);
  FixedOpCounts counts_;
  std::shared_ptr<Prg> noise_;  // shared by copies; null: exact truncation
};

namespace fixed_detail {

inline Ring64 EncodeAt(double x, int frac_bits) {
  return FixedPoint{frac_bits}.Encode(x);
}
inline Ring64 Neg(Ring64 c) {
  return ~c + 1;
}
// ceil(log2(n)) for n >= 1.
int CeilLog2(std::size_t n);

// 1 - b for a 0/1 vector.
template <typename B>
typename B::Vec OneMinus(B& be, const typename B::Vec& b) {
  return be.AddConst(be.MulConst(b, Neg(1)), 1);
}

// Elements [begin, begin + count) of a.
template <typename B>
typename B::Vec Slice(B& be, const typename B::Vec& a, std::size_t begin, std::size_t count) {
  std::vector<std::size_t> idx(count);
  for (std::size_t i = 0; i < count; ++i) idx[i] = begin + i;
  return be.Gather(a, idx);
}

// out[i] = a[i / cols]: one value per row repeated over the row's cols elements.
inline std::vector<std::size_t> RowBroadcast(std::size_t rows, std::size_t cols) {
  std::vector<std::size_t> idx(rows * cols);
  for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i / cols;
  return idx;
}

}  // namespace fixed_detail

}  // namespace mpcache
