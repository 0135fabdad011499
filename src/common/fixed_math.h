// Fixed-point nonlinear kernels over Z_2^64 (exp, reciprocal, rsqrt, sigmoid, SiLU,
// softmax, RMSNorm), written once as templates over an arithmetic backend
// (common/fixed_backend.h) so that the plaintext simulation and the secure engine run the
// *same* sequence of operations. This header holds the row kernels (RowMax, Softmax,
// RmsNorm) and the plaintext wrapper FixedMath; exp, sigmoid and SiLU are in
// common/fixed_activations.h, reciprocal and rsqrt in common/fixed_inverse.h, the ranked
// row max and argmax in common/fixed_rank.h.
// docs/fixed-point.md states each kernel's algorithm, error bound and exact op counts.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "common/fixed_activations.h"
#include "common/fixed_backend.h"
#include "common/fixed_inverse.h"
#include "common/fixed_rank.h"

namespace mpcache {

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

// Row-wise softmax (max-subtracted) of rows x cols values at f bits: RowMaxRank, Exp, RowSum (in
// [1, cols]: the max term is exactly 1), then e * 1/sum with the product folded into the
// reciprocal's last Newton step. `max_bits` (0: p.compare_bits) is the row max's comparison
// width: exact while the values differ by less than 2^(max_bits - 1) units (attention scores
// use kScoreCompareBits, so that their own truncation rides in the first comparison).
template <typename B>
typename B::Vec Softmax(B& be, const FixedMathParams& p, const typename B::Vec& x, std::size_t rows,
                        std::size_t cols, int max_bits = 0) {
  const int f = p.frac_bits;
  Multiplier<B> mult;
  mult.bcast = fixed_detail::RowBroadcast(rows, cols);
  auto mx = RowMaxRank(be, x, rows, cols, max_bits > 0 ? max_bits : p.compare_bits,
                       RankGroup(cols, static_cast<std::size_t>(p.softmax_max_group), rows,
                                 static_cast<std::uint64_t>(p.rank_round_cost)));
  auto e = Exp(be, p, be.Sub(x, be.Gather(mx, mult.bcast)));
  auto sum = be.RowSum(e, cols);
  mult.m = &e;
  mult.m_frac = f;
  return ReciprocalTimes(be, p, sum, f, fixed_detail::CeilLog2(cols), p.recip_sub_buckets,
                         p.recip_iterations, mult, f);
}

// Attention scores s = Trunc(q . k * c) with c = 1/sqrt(head size) encoded at kScoreScaleBits
// (one truncation by f + kScoreScaleBits of the sums at 2f bits; |q . k| < 2^10 keeps the
// product below 2^60 at f = 18), and their row max compared at kScoreCompareBits (exact for
// scores that differ by less than 2^(31 - 1 - f) = 4096 at f = 18): 63 - (f + 14) >= 31, so
// the scores' truncation rides in the row max's first comparison (mpc/lazy_shares.h).
inline constexpr int kScoreScaleBits = 14;
inline constexpr int kScoreCompareBits = 31;

// Row-wise RMSNorm: out = g * x / sqrt(mean(x^2) + eps) for rows x cols values (x, g at f
// bits; g holds `cols` gains, shared by all rows). The squares and x*g are kept at
// f + kRmsExtraBits bits so that small activations keep their relative precision; the
// product (x g) * rsqrt is folded into rsqrt's last Newton step.
inline constexpr int kRmsExtraBits = 8;

namespace fixed_detail {

// RmsNorm's part after the first product batch: sq = x^2 and xg = x g, both truncated to
// f + kRmsExtraBits bits (pending).
template <typename B>
typename B::Vec RmsNormFrom(B& be, const FixedMathParams& p, const typename B::Vec& sq,
                            const typename B::Vec& xg, std::size_t rows, std::size_t cols,
                            double eps) {
  const int f = p.frac_bits, fm = f + kRmsExtraBits;
  auto ss = be.RowSum(sq, cols);
  const int log2c = CeilLog2(cols);
  auto eps_enc = EncodeAt(eps, fm);
  if (eps_enc == 0) eps_enc = 1;  // eps below the resolution: one unit
  Multiplier<B> mult;
  mult.m = &xg;
  mult.m_frac = fm;
  mult.bcast = RowBroadcast(rows, cols);
  if ((std::size_t{1} << log2c) == cols) {
    // C a power of two: ss + C eps is the mean square at fm + log2 C bits, exactly; the
    // bucket comparisons read it so (taking in the squares' truncations by 2f - fm as they
    // are: RsqrtTimes gives up its headroom bit where that bit would cost a round, C = 4096
    // at f = 18, the 7B width), the Newton steps read it shifted back to fm bits.
    return RsqrtTimes(be, p, be.AddConst(ss, eps_enc << log2c), fm, mult, f, log2c, 2 * f - fm);
  }
  // Divide by 2^(log2c - 1), then multiply by K = 2^(log2c - 1) / cols in (1/2, 1] at kb
  // bits: ms < 2^hi keeps ms * K < 2^(hi + fm + kb) <= 2^59.
  const int kb = 59 - p.rsqrt_log2_max - fm;
  const double k = std::ldexp(1.0, log2c - 1) / static_cast<double>(cols);
  auto ms = be.Trunc(be.MulConst(be.Trunc(ss, log2c - 1), EncodeAt(k, kb)), kb);
  return RsqrtTimes(be, p, be.AddConst(ms, eps_enc), fm, mult, f);
}

}  // namespace fixed_detail

template <typename B>
typename B::Vec RmsNorm(B& be, const FixedMathParams& p, const typename B::Vec& x,
                        const typename B::Vec& g, std::size_t rows, std::size_t cols, double eps) {
  const int f = p.frac_bits, fm = f + kRmsExtraBits;
  const std::size_t n = rows * cols;
  std::vector<std::size_t> gidx(n);
  for (std::size_t i = 0; i < n; ++i) gidx[i] = i % cols;
  // One product batch: x*g and x*x, both truncated to fm bits.
  auto both = be.MulAndSquare(x, be.Gather(g, gidx), x);  // [x g | x^2]: x^2 a square
  auto sq = be.Trunc(fixed_detail::Slice(be, both, n, n), 2 * f - fm);
  auto xg = be.Trunc(fixed_detail::Slice(be, both, 0, n), 2 * f - fm);
  return fixed_detail::RmsNormFrom(be, p, sq, xg, rows, cols, eps);
}

// The same with public gains g (`cols` values: the model's public weights). x g is local, so
// the first batch is Square(x) alone: x opened once per element instead of twice, and g not
// at all (docs/fixed-point.md gives the counts). The square comes first so that x's pending
// truncation, which that batch opens, is a share again when x g is truncated.
template <typename B>
typename B::Vec RmsNorm(B& be, const FixedMathParams& p, const typename B::Vec& x,
                        std::span<const Ring64> g, std::size_t rows, std::size_t cols, double eps) {
  const int f = p.frac_bits, fm = f + kRmsExtraBits;
  std::vector<Ring64> gains(rows * cols);
  for (std::size_t i = 0; i < gains.size(); ++i) gains[i] = g[i % cols];
  auto sq = be.Trunc(be.Square(x), 2 * f - fm);
  auto xg = be.Trunc(be.MulPublic(x, gains), 2 * f - fm);
  return fixed_detail::RmsNormFrom(be, p, sq, xg, rows, cols, eps);
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
  std::vector<Ring64> SiluTimes(const std::vector<Ring64>& x, const std::vector<Ring64>& h) {
    return mpcache::SiluTimes(be_, p_, x, h);
  }
  std::vector<Ring64> Softmax(const std::vector<Ring64>& x, std::size_t rows, std::size_t cols,
                              int max_bits = 0) {
    return mpcache::Softmax(be_, p_, x, rows, cols, max_bits);
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
