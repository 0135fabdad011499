// Fixed-point nonlinear kernels over Z_2^64 (exp, reciprocal, rsqrt, sigmoid, SiLU,
// softmax, RMSNorm), written once as templates over an arithmetic backend so that the
// plaintext simulation (PlainBackend below) and the secure engine run the *same* sequence
// of operations. A backend provides only what MPC can do:
//
//   using Vec = ...;                         // a batch of ring elements (plain or shared)
//   std::size_t Size(const Vec&)
//   Vec Add(const Vec&, const Vec&)          // local
//   Vec Sub(const Vec&, const Vec&)          // local
//   Vec AddConst(const Vec&, Ring64 c)       // local: + public c (raw ring element)
//   Vec MulConst(const Vec&, Ring64 c)       // local: * public c (raw ring product)
//   Vec Trunc(const Vec&, int bits)          // arithmetic shift right (secure: may be +1 LSB)
//   Vec Mul(const Vec&, const Vec&)          // secret x secret, raw ring product (one round)
//   Vec MulTrunc(const Vec&, const Vec&, int bits)  // secret x secret, then Trunc (one round)
//   Vec IsNegative(const Vec&, int bits)     // 1 if the value, read as a signed `bits`-bit
//                                            // number, is < 0 (bit bits-1), else 0: exact
//                                            // sign for |x| < 2^(bits-1). One secure
//                                            // comparison per element, one batch; fewer bits
//                                            // are cheaper (mpc/compare/compare.h)
//   Vec Gather(const Vec&, std::span<const std::size_t> idx)  // local: out[i] = a[idx[i]]
//   Vec Concat(const Vec&, const Vec&)       // local
//   Vec RowSum(const Vec&, std::size_t cols) // local: sums of consecutive groups of `cols`
//
// Every call of Mul/MulTrunc/IsNegative/Trunc is one batch (one communication round in the
// secure engine); the kernels below are written so that independent products share a batch.
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

// Parameters of the kernels. All precisions are fractional bits of ring encodings; every
// intermediate product stays below 2^61 in magnitude inside the stated input domains.
struct FixedMathParams {
  // f: inputs and outputs of every kernel. 18, not common/fixed_point.h's 16: on stories260K
  // f = 16 leaves one greedy step where margin < 2 * logit error (docs/fixed-point.md).
  int frac_bits = kRecommendedFracBits;
  // exp(x), x <= 0: exp(x) = 0 for x < -exp_clip, else (1 + z + z^2/2 + z^3/6)^(2^n)
  // with z = x / 2^n.
  int exp_squarings = 5;   // n
  int exp_clip = 16;       // integer threshold; exp(-16) = 1.1e-7
  int exp_frac_bits = 24;  // internal precision; needs f + n <= exp_frac_bits <= 25
  // 1/d, d in [1, 2^k] (k given per call): bucket by powers of two (k-1 comparisons),
  // minimax linear start per bucket (relative error <= 1/17), then Newton iterations.
  int recip_iterations = 2;
  int recip_frac_bits = 30;  // internal precision of the Newton iterations (<= 30)
  // 1/sqrt(v), v in [2^rsqrt_log2_min, 2^rsqrt_log2_max]: same bucketing, Newton steps.
  int rsqrt_log2_min = -10;
  int rsqrt_log2_max = 14;
  int rsqrt_iterations = 2;
  // Width of the comparisons whose operands the kernels cannot bound from their own
  // parameters (exp's clipping, sigmoid's sign, softmax's row max, argmax): exact while
  // |x| < 2^(compare_bits - 1), i.e. |x| < 2^21 = 2M at f = 18. The bucket comparisons of
  // reciprocal and rsqrt take exactly the width their domain needs.
  int compare_bits = 40;

  Status Validate() const;
  // Internal precision of rsqrt (depends on the domain's lower end so y^2 fits).
  int RsqrtFracBits() const;
  // Precision of the public constant 1/6 in exp's cubic term (keeps products < 2^61).
  int ExpSixthBits() const { return 64 - 2 * exp_frac_bits - 3 + 2; }
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
  Vec Trunc(const Vec& a, int bits);
  Vec Mul(const Vec& a, const Vec& b);
  Vec MulTrunc(const Vec& a, const Vec& b, int bits);
  Vec IsNegative(const Vec& a, int bits);
  Vec Gather(const Vec& a, std::span<const std::size_t> idx) const;
  Vec Concat(const Vec& a, const Vec& b) const;
  Vec RowSum(const Vec& a, std::size_t cols) const;

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
// Minimax linear starts on [1, 2]: 1/x ~ kRecipA - kRecipB x (relative error 1/17),
// 1/sqrt(x) ~ kRsqrtA - kRsqrtB x (relative error 0.0223).
inline constexpr double kRecipA = 24.0 / 17.0;
inline constexpr double kRecipB = 8.0 / 17.0;
inline constexpr double kRsqrtA = 1.2643361668449673;
inline constexpr double kRsqrtB = 0.2865;

// 1 - b for a 0/1 vector.
template <typename B>
typename B::Vec OneMinus(B& be, const typename B::Vec& b) {
  return be.AddConst(be.MulConst(b, Neg(1)), 1);
}

// Bits b_j = [v >= 2^j] for j = lo+1 .. hi-1 (v at frac_bits), one comparison batch. Returns
// them concatenated j-major: element i of bit j at (j - lo - 1) * n + i.
template <typename B>
typename B::Vec BucketBits(B& be, const typename B::Vec& v, int frac_bits, int lo, int hi) {
  typename B::Vec diffs;
  bool first = true;
  for (int j = lo + 1; j < hi; ++j) {
    auto d = be.AddConst(v, Neg(EncodeAt(std::ldexp(1.0, j), frac_bits)));
    diffs = first ? d : be.Concat(diffs, d);
    first = false;
  }
  if (first) return diffs;
  // |v - 2^j| < 2^(hi + frac_bits) inside the domain: that many bits + sign + slack.
  const int bits = std::min(64, hi + frac_bits + 2);
  return OneMinus(be, be.IsNegative(diffs, bits));
}

// c_0 + sum_j bits_j * (c_j - c_{j-1}): selects the bucket's constant (all local);
// consts.size() >= 2 and bits from BucketBits with consts.size() - 1 thresholds.
template <typename B>
typename B::Vec SelectConst(B& be, const typename B::Vec& bits, std::size_t n,
                            const std::vector<Ring64>& consts) {
  typename B::Vec out;
  std::vector<std::size_t> idx(n);
  for (std::size_t j = 1; j < consts.size(); ++j) {
    for (std::size_t i = 0; i < n; ++i) idx[i] = (j - 1) * n + i;
    auto term = be.MulConst(be.Gather(bits, idx), consts[j] - consts[j - 1]);
    out = (j == 1) ? term : be.Add(out, term);
  }
  return be.AddConst(out, consts[0]);
}

}  // namespace fixed_detail

// exp(x) for x <= 0 (x at f bits; inputs > 0 are outside the domain), result at out_frac
// bits (f <= out_frac <= exp_frac_bits). One comparison per element; n + 3 product batches.
template <typename B>
typename B::Vec Exp(B& be, const FixedMathParams& p, const typename B::Vec& x, int out_frac) {
  using fixed_detail::EncodeAt;
  const int f = p.frac_bits, n = p.exp_squarings, fe = p.exp_frac_bits;
  const int fk = p.ExpSixthBits();
  // below = [x < -clip]: the only comparison.
  auto below = be.IsNegative(be.AddConst(x, EncodeAt(p.exp_clip, f)), p.compare_bits);
  // z = x / 2^n at fe bits: exact (local multiplication by 2^(fe - f - n)).
  auto z = be.MulConst(x, Ring64{1} << (fe - f - n));
  // base = 1 + z + z^2 (3 + z) / 6 at fe bits (third-order Taylor).
  auto z2 = be.MulTrunc(z, z, fe);
  auto cubic = be.MulTrunc(be.MulConst(z2, EncodeAt(1.0 / 6.0, fk)),
                           be.AddConst(z, Ring64{3} << fe), fe + fk);
  auto base = be.AddConst(be.Add(z, cubic), Ring64{1} << fe);
  for (int i = 0; i < n; ++i) {
    const int bits = (i + 1 == n) ? 2 * fe - out_frac : fe;  // last one lands at out_frac
    base = be.MulTrunc(base, base, bits);
  }
  if (n == 0) base = be.Trunc(base, fe - out_frac);
  return be.Mul(base, fixed_detail::OneMinus(be, below));
}

template <typename B>
typename B::Vec Exp(B& be, const FixedMathParams& p, const typename B::Vec& x) {
  return Exp(be, p, x, p.frac_bits);
}

// 1/d for d in [1, 2^log2_max] (d at in_frac <= 29 bits), result at out_frac fractional
// bits (out_frac <= recip_frac_bits). log2_max - 1 comparisons per element (none for
// log2_max <= 1), 1 + 2 * recip_iterations product batches.
template <typename B>
typename B::Vec Reciprocal(B& be, const FixedMathParams& p, const typename B::Vec& d, int in_frac,
                           int log2_max, int out_frac) {
  using fixed_detail::EncodeAt;
  using fixed_detail::Neg;
  const int fy = p.recip_frac_bits;
  const int k = log2_max < 1 ? 1 : log2_max;
  const int fb = 60 - in_frac;  // precision of the slope constants: B d < 2^(fb + in_frac)
  const std::size_t n = B::Size(d);
  std::vector<Ring64> a_consts, b_consts;
  for (int j = 0; j < k; ++j) {
    a_consts.push_back(EncodeAt(fixed_detail::kRecipA * std::ldexp(1.0, -j), fy));
    b_consts.push_back(EncodeAt(fixed_detail::kRecipB * std::ldexp(1.0, -2 * j), fb));
  }
  typename B::Vec a_sel, b_sel;
  if (k == 1) {
    auto zero = be.MulConst(d, 0);
    a_sel = be.AddConst(zero, a_consts[0]);
    b_sel = be.AddConst(zero, b_consts[0]);
  } else {
    auto bits = fixed_detail::BucketBits(be, d, in_frac, 0, k);
    a_sel = fixed_detail::SelectConst(be, bits, n, a_consts);
    b_sel = fixed_detail::SelectConst(be, bits, n, b_consts);
  }
  // y0 = A - B d at fy bits.
  auto y = be.Sub(a_sel, be.MulTrunc(b_sel, d, fb + in_frac - fy));
  for (int i = 0; i < p.recip_iterations; ++i) {
    // e = 2 - d y ; y = y e.
    auto e = be.AddConst(be.MulConst(be.MulTrunc(d, y, in_frac), Neg(1)), Ring64{2} << fy);
    const bool last = i + 1 == p.recip_iterations;
    y = be.MulTrunc(y, e, last ? 2 * fy - out_frac : fy);
  }
  if (p.recip_iterations == 0) y = be.Trunc(y, fy - out_frac);
  return y;
}

template <typename B>
typename B::Vec Reciprocal(B& be, const FixedMathParams& p, const typename B::Vec& d,
                           int log2_max) {
  return Reciprocal(be, p, d, p.frac_bits, log2_max, p.frac_bits);
}

// 1/sqrt(v) for v in [2^rsqrt_log2_min, 2^rsqrt_log2_max] (v at in_frac bits, f <= in_frac
// <= f + 8), result at out_frac bits (out_frac <= RsqrtFracBits()).
// rsqrt_log2_max - rsqrt_log2_min - 1 comparisons per element, 1 + 3 * rsqrt_iterations
// product batches.
template <typename B>
typename B::Vec Rsqrt(B& be, const FixedMathParams& p, const typename B::Vec& v, int in_frac,
                      int out_frac) {
  using fixed_detail::EncodeAt;
  using fixed_detail::Neg;
  const int fr = p.RsqrtFracBits();
  const int lo = p.rsqrt_log2_min, hi = p.rsqrt_log2_max;
  const int fb = 58 - in_frac - (1 - lo) / 2;  // slope constants: B v < 2^(-lo/2 + 1)
  const std::size_t n = B::Size(v);
  auto bits = fixed_detail::BucketBits(be, v, in_frac, lo, hi);
  std::vector<Ring64> a_consts, b_consts;
  for (int j = lo; j < hi; ++j) {
    a_consts.push_back(EncodeAt(fixed_detail::kRsqrtA * std::pow(2.0, -0.5 * j), fr));
    b_consts.push_back(EncodeAt(fixed_detail::kRsqrtB * std::pow(2.0, -1.5 * j), fb));
  }
  auto a_sel = fixed_detail::SelectConst(be, bits, n, a_consts);
  auto b_sel = fixed_detail::SelectConst(be, bits, n, b_consts);
  auto y = be.Sub(a_sel, be.MulTrunc(b_sel, v, fb + in_frac - fr));
  for (int i = 0; i < p.rsqrt_iterations; ++i) {
    // y = y (3 - v y^2) / 2.
    auto y2 = be.MulTrunc(y, y, fr);
    auto t = be.AddConst(be.MulConst(be.MulTrunc(v, y2, in_frac), Neg(1)), Ring64{3} << fr);
    const bool last = i + 1 == p.rsqrt_iterations;
    y = be.MulTrunc(y, t, last ? 2 * fr + 1 - out_frac : fr + 1);
  }
  if (p.rsqrt_iterations == 0) y = be.Trunc(y, fr - out_frac);
  return y;
}

template <typename B>
typename B::Vec Rsqrt(B& be, const FixedMathParams& p, const typename B::Vec& v) {
  return Rsqrt(be, p, v, p.frac_bits, p.frac_bits);
}

// The parts sigmoid and SiLU share, for x at f bits: s = [x < 0] (a comparison), sx = s x,
// and q = e / (1 + e) with e = exp(-|x|), at exp_frac_bits (so that |x| q stays accurate
// for large |x|). sigmoid(x) = 1 - q for x >= 0, q for x < 0.
template <typename B>
struct SigmoidParts {
  typename B::Vec s, sx, q;
};

template <typename B>
SigmoidParts<B> SigmoidCore(B& be, const FixedMathParams& p, const typename B::Vec& x) {
  const int fs = p.exp_frac_bits;
  SigmoidParts<B> out;
  out.s = be.IsNegative(x, p.compare_bits);
  out.sx = be.Mul(out.s, x);                                               // exact
  auto neg_abs = be.Sub(be.MulConst(out.sx, 2), x);                        // -|x| = 2 s x - x
  auto e = Exp(be, p, neg_abs, fs);                                        // exp(-|x|) in (0, 1]
  auto r = Reciprocal(be, p, be.AddConst(e, Ring64{1} << fs), fs, 1, fs);  // 1/(1+e)
  out.q = be.MulTrunc(e, r, fs);
  return out;
}

// sigmoid(x) at f bits: 1 - q + s (2q - 1).
template <typename B>
typename B::Vec Sigmoid(B& be, const FixedMathParams& p, const typename B::Vec& x) {
  using fixed_detail::Neg;
  const int fs = p.exp_frac_bits, f = p.frac_bits;
  auto parts = SigmoidCore(be, p, x);
  auto one_minus_q = be.AddConst(be.MulConst(parts.q, Neg(1)), Ring64{1} << fs);
  auto two_q_minus_1 = be.AddConst(be.MulConst(parts.q, 2), Neg(Ring64{1} << fs));
  auto sig = be.Add(one_minus_q, be.Mul(parts.s, two_q_minus_1));
  return be.Trunc(sig, fs - f);
}

// SiLU(x) = x sigmoid(x) = relu(x) - |x| q, at f bits.
template <typename B>
typename B::Vec Silu(B& be, const FixedMathParams& p, const typename B::Vec& x) {
  auto parts = SigmoidCore(be, p, x);
  auto relu = be.Sub(x, parts.sx);
  auto abs = be.Sub(x, be.MulConst(parts.sx, 2));
  return be.Sub(relu, be.MulTrunc(abs, parts.q, p.exp_frac_bits));
}

// Row-wise max of rows x cols values: a tournament of groups of up to 4 consecutive
// candidates, ceil(log4(cols)) levels (a row of width w becomes ceil(w / 4) winners; the
// last group of a row may be smaller). Per level: ONE comparison batch of every pair within
// every group (g(g - 1)/2 for a group of g), then the winner is selected as sum_i w_i x_i
// with w_i = prod_{j != i} [x_i beats x_j] (x_i beats x_j: x_i >= x_j for i < j, x_i > x_j
// for i > j), so exactly one w_i is 1, the first maximum. The products of the g factors
// (g - 1 bits and x_i) take two product batches — (f0 f1)(f2 f3) — or one when no group has
// more than 2 members. Exact: comparisons and 0/1 products are exact on ring values.
template <typename B>
typename B::Vec RowMax(B& be, const typename B::Vec& x, std::size_t rows, std::size_t cols,
                       int bits = 64) {
  constexpr std::size_t kGroup = 4;
  auto cur = x;
  std::size_t width = cols;
  while (width > 1) {
    const std::size_t next = (width + kGroup - 1) / kGroup;
    auto group_size = [&](std::size_t k) { return std::min(kGroup, width - k * kGroup); };
    // Every pair (i < j) of every group: c = [x_i < x_j], one batch.
    std::vector<std::size_t> ia, ib;
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t k = 0; k < next; ++k) {
        const std::size_t g = group_size(k), base = r * width + k * kGroup;
        for (std::size_t i = 0; i < g; ++i) {
          for (std::size_t j = i + 1; j < g; ++j) {
            ia.push_back(base + i);
            ib.push_back(base + j);
          }
        }
      }
    }
    const std::size_t npairs = ia.size();
    auto c = be.IsNegative(be.Sub(be.Gather(cur, ia), be.Gather(cur, ib)), bits);
    // pool = [1 - c (x_i beats x_j) | c (x_j beats x_i) | cur].
    auto pool = be.Concat(be.Concat(fixed_detail::OneMinus(be, c), c), cur);
    const std::size_t cur_at = 2 * npairs;
    // Each member's factors (indices into pool): its g - 1 beat bits, then its value.
    std::vector<std::vector<std::size_t>> factors;
    {
      std::size_t pair = 0;
      for (std::size_t r = 0; r < rows; ++r) {
        for (std::size_t k = 0; k < next; ++k) {
          const std::size_t g = group_size(k), base = r * width + k * kGroup;
          std::vector<std::vector<std::size_t>> f(g);
          for (std::size_t i = 0; i < g; ++i) {
            for (std::size_t j = i + 1; j < g; ++j, ++pair) {
              f[i].push_back(pair);           // x_i beats x_j (i < j): x_i >= x_j
              f[j].push_back(npairs + pair);  // x_j beats x_i (j > i): x_j > x_i
            }
          }
          for (std::size_t i = 0; i < g; ++i) {
            f[i].push_back(cur_at + base + i);
            factors.push_back(std::move(f[i]));
          }
        }
      }
    }
    // Stage 1: f0 f1 and f2 f3 (f2 alone when there are 3 factors) into s1.
    std::vector<std::size_t> l1, r1;
    for (const auto& f : factors) {
      if (f.size() >= 2) {
        l1.push_back(f[0]);
        r1.push_back(f[1]);
      }
      if (f.size() == 4) {
        l1.push_back(f[2]);
        r1.push_back(f[3]);
      }
    }
    auto s1 = be.Mul(be.Gather(pool, l1), be.Gather(pool, r1));
    // pool2 = [s1 | pool]; stage 2 multiplies the two stage-1 parts of members with >= 3.
    auto pool2 = be.Concat(s1, pool);
    const std::size_t pool_at = B::Size(s1);
    std::vector<std::size_t> l2, r2, term;  // term: the member's w_i x_i in pool3
    {
      std::size_t at1 = 0;
      for (const auto& f : factors) {
        if (f.size() == 1) {
          term.push_back(pool_at + f[0]);  // a group of one: its value, no product
        } else if (f.size() == 2) {
          term.push_back(at1++);
        } else {
          l2.push_back(at1++);
          r2.push_back(f.size() == 4 ? at1++ : pool_at + f[2]);
          term.push_back(~std::size_t{0});  // filled below
        }
      }
    }
    typename B::Vec pool3 = pool2;
    if (!l2.empty()) {
      auto s2 = be.Mul(be.Gather(pool2, l2), be.Gather(pool2, r2));
      const std::size_t shift = B::Size(s2);
      std::size_t at2 = 0;
      for (auto& t : term) t = (t == ~std::size_t{0}) ? at2++ : t + shift;
      pool3 = be.Concat(s2, pool2);
    }
    // Sum each group's terms (a zero pads groups of fewer than 4).
    const std::size_t zero_at = B::Size(pool3);
    pool3 = be.Concat(pool3, be.MulConst(be.Gather(cur, std::vector<std::size_t>{0}), 0));
    std::vector<std::vector<std::size_t>> slot(kGroup);
    {
      std::size_t m = 0;
      for (std::size_t r = 0; r < rows; ++r) {
        for (std::size_t k = 0; k < next; ++k) {
          const std::size_t g = group_size(k);
          for (std::size_t i = 0; i < kGroup; ++i) slot[i].push_back(i < g ? term[m + i] : zero_at);
          m += g;
        }
      }
    }
    cur = be.Gather(pool3, slot[0]);
    for (std::size_t i = 1; i < kGroup; ++i) cur = be.Add(cur, be.Gather(pool3, slot[i]));
    width = next;
  }
  return cur;
}

// Row-wise softmax (max-subtracted) of rows x cols values at f bits.
template <typename B>
typename B::Vec Softmax(B& be, const FixedMathParams& p, const typename B::Vec& x, std::size_t rows,
                        std::size_t cols) {
  const int fy = p.recip_frac_bits;
  std::vector<std::size_t> bcast(rows * cols);
  for (std::size_t i = 0; i < bcast.size(); ++i) bcast[i] = i / cols;
  auto mx = RowMax(be, x, rows, cols, p.compare_bits);
  auto e = Exp(be, p, be.Sub(x, be.Gather(mx, bcast)));
  auto sum = be.RowSum(e, cols);  // in [1, cols]
  auto inv = Reciprocal(be, p, sum, p.frac_bits, fixed_detail::CeilLog2(cols), fy);
  return be.MulTrunc(e, be.Gather(inv, bcast), fy);
}

// Row-wise RMSNorm: out = g * x / sqrt(mean(x^2) + eps) for rows x cols values (x, g at f
// bits; g holds `cols` gains, shared by all rows). The squares and x*g are kept at
// f + kRmsExtraBits bits so that small activations keep their relative precision.
inline constexpr int kRmsExtraBits = 8;

template <typename B>
typename B::Vec RmsNorm(B& be, const FixedMathParams& p, const typename B::Vec& x,
                        const typename B::Vec& g, std::size_t rows, std::size_t cols, double eps) {
  const int f = p.frac_bits, fr = p.RsqrtFracBits(), fm = f + kRmsExtraBits;
  const std::size_t n = rows * cols;
  std::vector<std::size_t> gidx(n), bcast(n);
  for (std::size_t i = 0; i < n; ++i) {
    gidx[i] = i % cols;
    bcast[i] = i / cols;
  }
  // One product batch: x*x and x*g, both to fm bits.
  auto both = be.MulTrunc(be.Concat(x, x), be.Concat(x, be.Gather(g, gidx)), 2 * f - fm);
  std::vector<std::size_t> first(n), second(n);
  for (std::size_t i = 0; i < n; ++i) {
    first[i] = i;
    second[i] = n + i;
  }
  auto sq = be.Gather(both, first), xg = be.Gather(both, second);
  auto ss = be.RowSum(sq, cols);
  const int log2c = fixed_detail::CeilLog2(cols);
  typename B::Vec ms;
  if ((std::size_t{1} << log2c) == cols) {
    ms = be.Trunc(ss, log2c);
  } else {
    // Divide by 2^(log2c - 1), then multiply by K = 2^(log2c - 1) / cols in (1/2, 1] at kb
    // bits: ms < 2^hi keeps ms * K < 2^(hi + fm + kb) <= 2^59.
    const int kb = 59 - p.rsqrt_log2_max - fm;
    const double k = std::ldexp(1.0, log2c - 1) / static_cast<double>(cols);
    ms = be.Trunc(be.MulConst(be.Trunc(ss, log2c - 1), fixed_detail::EncodeAt(k, kb)), kb);
  }
  auto eps_enc = fixed_detail::EncodeAt(eps, fm);
  if (eps_enc == 0) eps_enc = 1;  // eps below the resolution: one unit
  auto r = Rsqrt(be, p, be.AddConst(ms, eps_enc), fm, fr);
  return be.MulTrunc(xg, be.Gather(r, bcast), fr + kRmsExtraBits);
}

// Convenience wrappers over PlainBackend for plaintext callers (the fixed-point engine,
// tests, benchmarks): values in and out are ring encodings at p.frac_bits.
class FixedMath {
 public:
  explicit FixedMath(FixedMathParams params) : p_(params) {}
  FixedMath(FixedMathParams params, std::uint64_t noisy_trunc_seed)
      : p_(params), be_(noisy_trunc_seed) {}
  const FixedMathParams& params() const { return p_; }
  PlainBackend& backend() { return be_; }
  const PlainBackend& backend() const { return be_; }

  std::vector<Ring64> Exp(const std::vector<Ring64>& x) { return mpcache::Exp(be_, p_, x); }
  std::vector<Ring64> Reciprocal(const std::vector<Ring64>& d, int log2_max) {
    return mpcache::Reciprocal(be_, p_, d, log2_max);
  }
  std::vector<Ring64> Rsqrt(const std::vector<Ring64>& v) { return mpcache::Rsqrt(be_, p_, v); }
  std::vector<Ring64> Sigmoid(const std::vector<Ring64>& x) { return mpcache::Sigmoid(be_, p_, x); }
  std::vector<Ring64> Silu(const std::vector<Ring64>& x) { return mpcache::Silu(be_, p_, x); }
  std::vector<Ring64> Softmax(const std::vector<Ring64>& x, std::size_t rows, std::size_t cols) {
    return mpcache::Softmax(be_, p_, x, rows, cols);
  }
  std::vector<Ring64> RmsNorm(const std::vector<Ring64>& x, const std::vector<Ring64>& g,
                              std::size_t rows, std::size_t cols, double eps) {
    return mpcache::RmsNorm(be_, p_, x, g, rows, cols, eps);
  }

 private:
  FixedMathParams p_;
  PlainBackend be_;
};

}  // namespace mpcache
