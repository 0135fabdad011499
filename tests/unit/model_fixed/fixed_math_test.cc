// Error bounds and op counts of the fixed-point kernels (common/fixed_math.h) against double,
// over each kernel's whole useful input range, with exact and with noisy (+0/1 LSB)
// truncation. The bounds are the ones stated in docs/fixed-point.md.
#include "common/fixed_math.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <span>
#include <string>
#include <vector>

#include "common/fixed_sampling.h"

namespace mpcache {
namespace {

struct Case {
  FixedMathParams params;
  bool noisy;
  std::string Name() const {
    return "f=" + std::to_string(params.frac_bits) + (noisy ? " noisy" : " exact");
  }
};

std::vector<Case> Cases() {
  std::vector<Case> out;
  for (int f : {16, 18}) {
    for (bool noisy : {false, true}) {
      FixedMathParams p;
      p.frac_bits = f;
      out.push_back({p, noisy});
    }
  }
  return out;
}

FixedMath Make(const Case& c) {
  return c.noisy ? FixedMath(c.params, 7) : FixedMath(c.params);
}

std::vector<Ring64> Encode(const FixedPoint& fp, const std::vector<double>& xs) {
  std::vector<Ring64> out;
  for (double x : xs) out.push_back(fp.Encode(x));
  return out;
}

// Max |kernel - reference| over xs; reference evaluated at the *encoded* input.
template <typename Kernel, typename Ref>
double MaxAbsError(const FixedPoint& fp, const std::vector<double>& xs, Kernel kernel, Ref ref,
                   bool relative = false) {
  auto enc = Encode(fp, xs);
  auto out = kernel(enc);
  double worst = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const double x = fp.Decode(enc[i]);
    const double want = ref(x);
    double err = std::abs(fp.Decode(out[i]) - want);
    if (relative) err /= std::abs(want);
    worst = std::max(worst, err);
  }
  return worst;
}

std::vector<double> Grid(double lo, double hi, int n) {
  std::vector<double> xs;
  for (int i = 0; i <= n; ++i) xs.push_back(lo + (hi - lo) * i / n);
  return xs;
}

std::vector<double> LogGrid(double lo, double hi, int n) {
  std::vector<double> xs;
  for (int i = 0; i <= n; ++i) xs.push_back(lo * std::pow(hi / lo, static_cast<double>(i) / n));
  return xs;
}

TEST(FixedMathParams, DefaultsValidAndBadOnesRejected) {
  EXPECT_TRUE(FixedMathParams{}.Validate().ok());
  FixedMathParams p;
  p.exp_frac_bits = 26;
  EXPECT_FALSE(p.Validate().ok());
  p = {};
  p.frac_bits = 26;
  EXPECT_FALSE(p.Validate().ok());
  p = {};
  p.rsqrt_log2_max = p.rsqrt_log2_min + 1;
  EXPECT_FALSE(p.Validate().ok());
}

TEST(FixedMath, Exp) {
  for (const auto& c : Cases()) {
    auto fm = Make(c);
    FixedPoint fp{c.params.frac_bits};
    auto xs = Grid(-40, 0, 40000);
    const double err = MaxAbsError(
        fp, xs, [&](auto& v) { return fm.Exp(v); },
        [&](double x) { return x < -c.params.exp_clip ? 0.0 : std::exp(x); });
    std::cout << "exp " << c.Name() << " max_abs_error " << err << "\n";
    EXPECT_LE(err, 6e-5 + 3 * fp.Ulp()) << c.Name();
    // Relative accuracy near 0 (what softmax's largest terms see).
    EXPECT_LE(MaxAbsError(
                  fp, Grid(-1, 0, 2000), [&](auto& v) { return fm.Exp(v); },
                  [](double x) { return std::exp(x); }, true),
              2e-5 + 3 * fp.Ulp());
  }
}

TEST(FixedMath, ExpOpCounts) {
  FixedMath fm(FixedMathParams{});
  std::vector<Ring64> x(10, 0);
  fm.Exp(x);
  const auto& k = fm.backend().counts();
  const int n = FixedMathParams{}.exp_squarings;
  EXPECT_EQ(k.cmp_elems, 10u);
  EXPECT_EQ(k.cmp_batches, 1u);
  EXPECT_EQ(k.mul_batches, static_cast<std::uint64_t>(n + 3));
  EXPECT_EQ(k.mul_elems, 10u * (n + 3));
  // Each product but the last is truncated by its own call (free in the secure backend,
  // which fuses it into the next product's opening): z^2, z^2 w and the n squarings.
  EXPECT_EQ(k.trunc_batches, static_cast<std::uint64_t>(n + 2));
}

TEST(FixedMath, Reciprocal) {
  for (const auto& c : Cases()) {
    auto fm = Make(c);
    FixedPoint fp{c.params.frac_bits};
    for (int k : {1, 9, 12}) {
      auto xs = LogGrid(1, std::ldexp(1.0, k), 20000);
      const double err = MaxAbsError(
          fp, xs, [&](auto& v) { return fm.Reciprocal(v, k); }, [](double x) { return 1 / x; });
      std::cout << "recip [1,2^" << k << "] " << c.Name() << " max_abs_error " << err << "\n";
      EXPECT_LE(err, 2e-5 + 2 * fp.Ulp()) << c.Name() << " k=" << k;
    }
  }
}

TEST(FixedMath, ReciprocalOpCounts) {
  FixedMath fm(FixedMathParams{});
  std::vector<Ring64> d(4, FixedPoint{}.Encode(3.0));
  fm.Reciprocal(d, 12);
  const auto& k = fm.backend().counts();
  const FixedMathParams p;
  // 12 S - 1 bucket comparisons per element (S sub-buckets per power of two), the linear
  // start's product, 2 per Newton step.
  EXPECT_EQ(k.cmp_elems, 4u * (12 * p.recip_sub_buckets - 1));
  EXPECT_EQ(k.cmp_batches, 1u);
  EXPECT_EQ(k.mul_batches, 1u + 2 * p.recip_iterations);
  EXPECT_EQ(k.trunc_batches, 0u);
}

TEST(FixedMath, Rsqrt) {
  for (const auto& c : Cases()) {
    auto fm = Make(c);
    FixedPoint fp{c.params.frac_bits};
    auto xs = LogGrid(std::ldexp(1.0, c.params.rsqrt_log2_min),
                      std::ldexp(1.0, c.params.rsqrt_log2_max), 20000);
    // Relative error; the input's own rounding (half an ulp) is excluded by evaluating the
    // reference at the encoded input.
    const double err = MaxAbsError(
        fp, xs, [&](auto& v) { return fm.Rsqrt(v); }, [](double x) { return 1 / std::sqrt(x); },
        true);
    const double abs_err = MaxAbsError(
        fp, xs, [&](auto& v) { return fm.Rsqrt(v); }, [](double x) { return 1 / std::sqrt(x); });
    std::cout << "rsqrt " << c.Name() << " max_rel_error " << err << " max_abs_error " << abs_err
              << "\n";
    EXPECT_LE(abs_err, 2e-6 * std::ldexp(1.0, -c.params.rsqrt_log2_min / 2) + 2 * fp.Ulp());
    // Relative: the Newton error (1.6e-6, docs/fixed-point.md) plus 2 ulp of the smallest
    // output 2^(-log2_max / 2) (measured: f=16 2.0e-3 of 3.9e-3, f=18 7.0e-4 of 9.8e-4).
    EXPECT_LE(err, 2e-6 + 2 * fp.Ulp() * std::ldexp(1.0, c.params.rsqrt_log2_max / 2)) << c.Name();
  }
}

TEST(FixedMath, RsqrtOpCounts) {
  FixedMathParams p;
  FixedMath fm(p);
  std::vector<Ring64> v(3, FixedPoint{}.Encode(2.0));
  fm.Rsqrt(v);
  const auto& k = fm.backend().counts();
  EXPECT_EQ(k.cmp_elems, 3u * ((p.rsqrt_log2_max - p.rsqrt_log2_min) * p.rsqrt_sub_buckets - 1));
  EXPECT_EQ(k.cmp_batches, 1u);
  EXPECT_EQ(k.mul_batches, 1u + 3 * p.rsqrt_iterations);
}

TEST(FixedMath, SigmoidAndSilu) {
  for (const auto& c : Cases()) {
    auto fm = Make(c);
    FixedPoint fp{c.params.frac_bits};
    auto xs = Grid(-30, 30, 60000);
    const double sig_err = MaxAbsError(
        fp, xs, [&](auto& v) { return fm.Sigmoid(v); },
        [](double x) { return 1 / (1 + std::exp(-x)); });
    const double silu_err = MaxAbsError(
        fp, xs, [&](auto& v) { return fm.Silu(v); },
        [](double x) { return x / (1 + std::exp(-x)); });
    std::cout << "sigmoid " << c.Name() << " max_abs_error " << sig_err << "\n";
    std::cout << "silu " << c.Name() << " max_abs_error " << silu_err << "\n";
    EXPECT_LE(sig_err, 4e-5 + 3 * fp.Ulp());
    EXPECT_LE(silu_err, 1e-4 + 8 * fp.Ulp());
  }
}

TEST(FixedMath, SiluOpCounts) {
  FixedMathParams p;
  FixedMath fm(p);
  std::vector<Ring64> x(5, FixedPoint{}.Encode(-1.5));
  fm.Silu(x);
  const auto& k = fm.backend().counts();
  // One comparison batch: [x < 0], [x < -clip] and [x > clip].
  EXPECT_EQ(k.cmp_elems, 5u * 3);
  EXPECT_EQ(k.cmp_batches, 1u);
  // s x and x^2 together; exp from x^2 (z^2 w, n squarings, the clip: n + 2); the
  // reciprocal on [1, 2] (linear start without comparison, 2 products per step, |x| e
  // and the multiplier folded into its products).
  EXPECT_EQ(k.mul_batches,
            static_cast<std::uint64_t>(1 + p.exp_squarings + 2 + 2 * p.sigmoid_recip_iterations));
}

// Wide inputs (more than 3 x silu_round_cost elements) take the sign first and the clip from
// |x| = x - 2 s x: two comparisons per element in two batches, the same products, the same
// values as the one batch of three.
TEST(FixedMath, SiluSignFirstComparesTwicePerElement) {
  FixedMathParams p;
  EXPECT_FALSE(SigmoidSignFirst(p, 3 * 1024));
  EXPECT_TRUE(SigmoidSignFirst(p, 3 * 1024 + 1));
  EXPECT_TRUE(SigmoidSignFirst(p, 11008));  // Llama-2-7B's FFN
  EXPECT_FALSE(SigmoidSignFirst(p, 172));   // stories260K's
  p.silu_round_cost = 0;
  EXPECT_FALSE(SigmoidSignFirst(p, 1u << 20));
  p.silu_round_cost = 1;
  FixedMath one(FixedMathParams{}), two(p);
  std::vector<Ring64> x;
  const FixedPoint fp{p.frac_bits};
  // Both signs, inside and beyond the clip (16), and its edges, at the kernels' f.
  for (const double v : {-40.0, -16.0, -15.99, -3.0, -1e-4, 0.0, 1e-4, 2.5, 15.99, 16.0, 40.0}) {
    x.push_back(fp.Encode(v));
  }
  EXPECT_EQ(two.Silu(x), one.Silu(x));
  EXPECT_EQ(two.Sigmoid(x), one.Sigmoid(x));
  two.backend().ResetCounts();
  (void)two.Silu(x);
  const auto& k = two.backend().counts();
  EXPECT_EQ(k.cmp_elems, x.size() * 2);
  EXPECT_EQ(k.cmp_batches, 2u);
  EXPECT_EQ(k.mul_batches,
            static_cast<std::uint64_t>(1 + p.exp_squarings + 2 + 2 * p.sigmoid_recip_iterations));
  FixedMathParams bad;
  bad.silu_round_cost = -1;
  EXPECT_FALSE(bad.Validate().ok());
}

TEST(FixedMath, Softmax) {
  for (const auto& c : Cases()) {
    auto fm = Make(c);
    FixedPoint fp{c.params.frac_bits};
    Prg prg(TestSeed(3));
    double worst = 0;
    for (std::size_t cols : {1u, 2u, 7u, 64u, 512u, 1000u}) {
      const std::size_t rows = 3;
      std::vector<double> xs;
      for (std::size_t i = 0; i < rows * cols; ++i) {
        // Attention scores on stories260K span about [-20, 20]; row 1 is nearly flat.
        const double spread = (i / cols == 1) ? 0.5 : 20.0;
        xs.push_back((prg.NextDouble() * 2 - 1) * spread);
      }
      auto enc = Encode(fp, xs);
      auto out = fm.Softmax(enc, rows, cols);
      for (std::size_t r = 0; r < rows; ++r) {
        double mx = -1e300, sum = 0;
        for (std::size_t j = 0; j < cols; ++j) mx = std::max(mx, fp.Decode(enc[r * cols + j]));
        for (std::size_t j = 0; j < cols; ++j) sum += std::exp(fp.Decode(enc[r * cols + j]) - mx);
        for (std::size_t j = 0; j < cols; ++j) {
          const double want = std::exp(fp.Decode(enc[r * cols + j]) - mx) / sum;
          worst = std::max(worst, std::abs(fp.Decode(out[r * cols + j]) - want));
        }
      }
    }
    std::cout << "softmax " << c.Name() << " max_abs_error " << worst << "\n";
    EXPECT_LE(worst, 6e-5 + 3 * fp.Ulp()) << c.Name();
  }
}

// RowMax's 4-ary tournament, per row: a level of width w has ceil(w / 4) groups (the last
// one w - 4 floor(w / 4) wide when 4 does not divide w); a group of g costs g(g - 1)/2
// comparisons; each level is one comparison batch and 2 product batches (1 when no group
// has more than 2 members, i.e. w == 2).
struct MaxTheory {
  std::uint64_t cmp_per_row = 0, cmp_batches = 0, mul_batches = 0;
};
MaxTheory RowMaxTheory(std::size_t cols) {
  MaxTheory t;
  for (std::size_t w = cols; w > 1; w = (w + 3) / 4) {
    std::size_t widest = 0;
    for (std::size_t k = 0; k * 4 < w; ++k) {
      const std::size_t g = std::min<std::size_t>(4, w - 4 * k);
      t.cmp_per_row += g * (g - 1) / 2;
      widest = std::max(widest, g);
    }
    t.cmp_batches += 1;
    t.mul_batches += widest > 2 ? 2 : 1;
  }
  return t;
}

// RowMaxRank per row: a level of width w has n = ceil(w / G) groups of balanced sizes
// (gmax = ceil(w / n) for the first, gmax - 1 for the rest when n does not divide w), a group
// of g costs g(g - 1)/2 comparisons; a level is one comparison batch of pairs, one of wins
// (one per member, skipped when gmax <= 2) and one product batch.
MaxTheory RowMaxRankTheory(std::size_t cols, std::size_t group, std::uint64_t* win_cmp) {
  MaxTheory t;
  for (std::size_t w = cols; w > 1;) {
    const std::size_t n = (w + group - 1) / group, gmax = (w + n - 1) / n;
    const std::size_t big = w % n == 0 ? n : w % n;
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t g = k < big ? gmax : gmax - 1;
      t.cmp_per_row += g * (g - 1) / 2;
    }
    t.cmp_batches += gmax > 2 ? 2 : 1;
    if (gmax > 2) *win_cmp += w;
    t.mul_batches += 1;
    w = n;
  }
  return t;
}

TEST(FixedMath, RowMaxRankExactWithTiesAndCounts) {
  Prg prg(TestSeed(14));
  for (std::size_t group : {2u, 3u, 4u, 16u, 64u}) {
    for (std::size_t cols : {1u, 2u, 3u, 5u, 16u, 17u, 24u, 37u, 64u, 100u, 257u}) {
      const std::size_t rows = 3;
      std::vector<Ring64> x(rows * cols);
      for (auto& v : x) {
        v = static_cast<Ring64>(static_cast<std::int64_t>(prg.Uniform(2001)) - 1000);
      }
      if (cols >= 3) x[cols + 2] = x[cols];                        // possible ties in row 1
      for (std::size_t c = 0; c < cols; ++c) x[2 * cols + c] = 7;  // all equal in row 2
      PlainBackend be;
      const auto got = RowMaxRank(be, x, rows, cols, 40, group);
      ASSERT_EQ(got.size(), rows);
      for (std::size_t r = 0; r < rows; ++r) {
        std::int64_t want = static_cast<std::int64_t>(x[r * cols]);
        for (std::size_t c = 1; c < cols; ++c) {
          want = std::max(want, static_cast<std::int64_t>(x[r * cols + c]));
        }
        EXPECT_EQ(static_cast<std::int64_t>(got[r]), want)
            << "group " << group << " cols " << cols << " row " << r;
      }
      std::uint64_t wins = 0;
      const MaxTheory t = RowMaxRankTheory(cols, group, &wins);
      EXPECT_EQ(be.counts().cmp_elems, rows * (t.cmp_per_row + wins)) << group << " " << cols;
      EXPECT_EQ(be.counts().cmp_batches, t.cmp_batches) << group << " " << cols;
      EXPECT_EQ(be.counts().mul_batches, t.mul_batches) << group << " " << cols;
    }
  }
  // The decoding widths of stories260K's softmax at G = 16: 24 columns are two groups of 12
  // (132 comparisons) then a pair; 64 are 4 groups of 16 (480) then a group of 4 (6).
  std::uint64_t wins = 0;
  EXPECT_EQ(RowMaxRankTheory(24, 16, &wins).cmp_per_row, 133u);
  EXPECT_EQ(RowMaxRankTheory(24, 16, &wins).cmp_batches, 3u);
  EXPECT_EQ(RowMaxRankTheory(64, 16, &wins).cmp_per_row, 486u);
  EXPECT_EQ(RowMaxRankTheory(64, 16, &wins).cmp_batches, 4u);
}

// RowArgMaxRank: the max of RowMaxRank and the one-hot of the FIRST maximum of each row (what
// a plaintext scan picks), at the same comparisons as the max alone. Groups of more than 2:
// in the max's product batches, the one-hot adding cols products per row on every level after
// the first; pairs: top down after the max, one product batch per level but the top, of that
// level's width.
TEST(FixedMath, RowArgMaxRankPicksTheFirstMaximumInTheMaxsBatches) {
  Prg prg(TestSeed(15));
  for (std::size_t group : {2u, 3u, 16u, 64u}) {
    for (std::size_t cols : {1u, 2u, 3u, 17u, 37u, 100u, 512u}) {
      const std::size_t rows = 3;
      std::vector<Ring64> x(rows * cols);
      for (auto& v : x) {
        v = static_cast<Ring64>(static_cast<std::int64_t>(prg.Uniform(61)) - 30);  // many ties
      }
      for (std::size_t c = 0; c < cols; ++c) x[2 * cols + c] = 7;  // all equal in row 2
      PlainBackend be;
      const auto got = RowArgMaxRank(be, x, rows, cols, 40, group);
      ASSERT_EQ(got.max.size(), rows);
      ASSERT_EQ(got.one_hot.size(), rows * cols);
      std::size_t levels = 0;
      for (std::size_t w = cols; w > 1; w = (w + group - 1) / group) ++levels;
      for (std::size_t r = 0; r < rows; ++r) {
        const std::size_t first = static_cast<std::size_t>(
            RingArgmax(std::span<const Ring64>(x).subspan(r * cols, cols)));
        EXPECT_EQ(got.max[r], x[r * cols + first]) << group << " " << cols << " row " << r;
        for (std::size_t c = 0; c < cols; ++c) {
          EXPECT_EQ(got.one_hot[r * cols + c], c == first ? 1u : 0u)
              << "group " << group << " cols " << cols << " row " << r << " col " << c;
        }
      }
      PlainBackend max_only;
      (void)RowMaxRank(max_only, x, rows, cols, 40, group);
      EXPECT_EQ(be.counts().cmp_batches, max_only.counts().cmp_batches);
      EXPECT_EQ(be.counts().cmp_elems, max_only.counts().cmp_elems);
      if (group == 2) {
        std::size_t below_top = 0;  // the widths of every level but the top
        for (std::size_t w = cols; w > 2; w = (w + 1) / 2) below_top += w;
        EXPECT_EQ(be.counts().mul_batches,
                  max_only.counts().mul_batches + (levels > 0 ? levels - 1 : 0));
        EXPECT_EQ(be.counts().mul_elems, max_only.counts().mul_elems + rows * below_top)
            << group << " " << cols;
      } else {
        EXPECT_EQ(be.counts().mul_batches, max_only.counts().mul_batches);
        EXPECT_EQ(be.counts().mul_elems,
                  max_only.counts().mul_elems + rows * cols * (levels > 0 ? levels - 1 : 0))
            << group << " " << cols;
      }
    }
  }
}

// The classifier's group: the fewest-round tournament unless pairs (with their top-down
// one-hot's extra rounds) cost less at argmax_round_cost; 0 keeps the fewest rounds.
TEST(FixedMath, ArgMaxGroupWeighsPairsAgainstTheFewestRounds) {
  EXPECT_EQ(ArgMaxRankCost(32000, 2).rounds, 60u + 14u);
  EXPECT_EQ(ArgMaxRankCost(32000, 2).pairs, 31999u);
  EXPECT_EQ(ArgMaxRankCost(32000, 8).rounds, RankTournamentCost(32000, 8).rounds);
  EXPECT_EQ(ArgMaxGroup(32000, 8, 1024), 2u);  // 74 x 1024 + 31 999 < 30 x 1024 + 127 981
  EXPECT_EQ(ArgMaxGroup(512, 8, 1024), 8u);    // 18 x 1024 + 2 044 < 44 x 1024 + 511
  EXPECT_EQ(ArgMaxGroup(40, 8, 1024), RankGroup(40, 8));
  for (const std::size_t cols : {2u, 3u, 40u, 512u, 32000u}) {
    EXPECT_EQ(ArgMaxGroup(cols, 8, 0), RankGroup(cols, 8)) << cols;
  }
  EXPECT_EQ(ArgMaxGroup(512, 8, 32), 2u);  // a cheap round: pairs already at 512
  EXPECT_EQ(FixedMathParams{}.argmax_round_cost, 1024);
  FixedMathParams bad;
  bad.argmax_round_cost = -1;
  EXPECT_FALSE(bad.Validate().ok());
}

TEST(FixedMath, RowMaxExactWithTiesAndCounts) {
  Prg prg(TestSeed(4));
  for (std::size_t cols :
       {1u, 2u, 3u, 4u, 5u, 6u, 7u, 8u, 9u, 15u, 16u, 17u, 37u, 64u, 100u, 1024u}) {
    const std::size_t rows = 3;
    std::vector<Ring64> x(rows * cols);
    for (auto& v : x) v = static_cast<Ring64>(static_cast<std::int64_t>(prg.Uniform(2001)) - 1000);
    if (cols >= 3) x[cols + 2] = x[cols];                        // possible ties in row 1
    for (std::size_t c = 0; c < cols; ++c) x[2 * cols + c] = 7;  // all equal in row 2
    PlainBackend be;
    const auto got = RowMax(be, x, rows, cols);
    ASSERT_EQ(got.size(), rows);
    for (std::size_t r = 0; r < rows; ++r) {
      std::int64_t want = static_cast<std::int64_t>(x[r * cols]);
      for (std::size_t c = 1; c < cols; ++c) {
        want = std::max(want, static_cast<std::int64_t>(x[r * cols + c]));
      }
      EXPECT_EQ(static_cast<std::int64_t>(got[r]), want) << "cols " << cols << " row " << r;
    }
    const MaxTheory t = RowMaxTheory(cols);
    EXPECT_EQ(be.counts().cmp_elems, rows * t.cmp_per_row) << cols;
    EXPECT_EQ(be.counts().cmp_batches, t.cmp_batches) << cols;
    EXPECT_EQ(be.counts().mul_batches, t.mul_batches) << cols;
  }
  // Written out for the softmax widths of the docs: C = 1024: 341 groups of 4 (2046
  // comparisons) in 5 levels; C = 64: 21 groups (126) in 3 levels; C = 100: 150 + 36 + 9 + 1.
  EXPECT_EQ(RowMaxTheory(1024).cmp_per_row, 2046u);
  EXPECT_EQ(RowMaxTheory(1024).cmp_batches, 5u);
  EXPECT_EQ(RowMaxTheory(1024).mul_batches, 10u);
  EXPECT_EQ(RowMaxTheory(64).cmp_per_row, 126u);
  EXPECT_EQ(RowMaxTheory(100).cmp_per_row, 196u);
  EXPECT_EQ(RowMaxTheory(100).mul_batches, 7u);
}

// RankGroup weighing rounds against pairs (softmax: rank_round_cost comparisons per round,
// every row of the batch paying its pairs): the cheapest by that weight, ties to fewer rounds.
TEST(FixedMath, RankGroupWeighsTheBatchsPairsAgainstItsRounds) {
  const FixedMathParams p;
  const auto w = static_cast<std::uint64_t>(p.rank_round_cost);
  EXPECT_EQ(RankGroup(17, 24, 32, w), 17u);  // a short row keeps its one level
  EXPECT_EQ(RankGroup(24, 24, 32, w), 24u);
  EXPECT_EQ(RankGroup(512, 24, 1, w), 23u);   // one row: 12 rounds, 5 698 pairs
  EXPECT_EQ(RankGroup(512, 24, 8, w), 8u);    // 8 rows: 18 rounds, 2 044 pairs each
  EXPECT_EQ(RankGroup(1024, 24, 32, w), 4u);  // 32 rows: 30 rounds, 2 046 pairs each
  EXPECT_EQ(RankGroup(4096, 24, 32, w), 2u);  // 48 rounds, 4 095 pairs each (32 760 at 18)
  for (std::size_t rows : {1u, 3u, 32u, 256u}) {
    for (std::size_t cols : {3u, 50u, 700u, 5000u}) {
      const std::size_t g = RankGroup(cols, 24, rows, w);
      const RankCost c = RankTournamentCost(cols, g);
      for (std::size_t h = 2; h <= 24; ++h) {
        const RankCost o = RankTournamentCost(cols, h);
        EXPECT_GE(w * o.rounds + rows * o.pairs, w * c.rounds + rows * c.pairs)
            << rows << " x " << cols << ": group " << h << " beats " << g;
      }
    }
  }
  // The softmax uses it: its comparisons are the weighted choice's.
  PlainBackend be;
  const std::size_t rows = 32, cols = 1024;
  std::vector<Ring64> x(rows * cols, 0);
  (void)Softmax(be, p, x, rows, cols);
  const RankCost c = RankTournamentCost(cols, RankGroup(cols, 24, rows, w));
  EXPECT_GE(be.counts().cmp_elems, rows * c.pairs);
  EXPECT_LT(be.counts().cmp_elems, rows * RankTournamentCost(cols, 23).pairs);
}

// RankGroup: of the groups of up to max_group members, the fewest rounds, then the fewest pairs.
TEST(FixedMath, RankGroupTakesTheFewestRoundsThenTheFewestPairs) {
  EXPECT_EQ(RankGroup(2, 24), 2u);
  EXPECT_EQ(RankGroup(17, 24), 17u);     // one level: 6 rounds
  EXPECT_EQ(RankGroup(24, 24), 24u);     // one level
  EXPECT_EQ(RankGroup(30, 24), 15u);     // two groups of 15, then a pair: 6 + 4 rounds
  EXPECT_EQ(RankGroup(64, 24), 8u);      // 8 groups of 8 (224 pairs), then 8 (28): 12 rounds
  EXPECT_EQ(RankGroup(512, 24), 23u);    // 23 groups, then 23: 12 rounds, 5 698 pairs
  EXPECT_EQ(RankGroup(32000, 24), 14u);  // four levels of 14: 24 rounds
  EXPECT_EQ(RankGroup(24, 16), 12u);     // two groups of 12, then a pair: 10 rounds
  EXPECT_EQ(RankTournamentCost(64, 8).rounds, 12u);
  EXPECT_EQ(RankTournamentCost(64, 8).pairs, 252u);
  EXPECT_EQ(RankTournamentCost(30, 15).rounds, 10u);
  for (std::size_t cols : {3u, 50u, 100u, 700u, 5000u}) {
    for (std::size_t m : {2u, 5u, 16u, 24u, 64u}) {
      const std::size_t g = RankGroup(cols, m);
      EXPECT_LE(g, m);
      const RankCost c = RankTournamentCost(cols, g);
      for (std::size_t h = 2; h <= m; ++h) {
        const RankCost o = RankTournamentCost(cols, h);
        EXPECT_TRUE(o.rounds > c.rounds || (o.rounds == c.rounds && o.pairs >= c.pairs))
            << cols << " " << m << ": group " << h << " beats " << g;
      }
      // The tournament's own counts agree with the cost model.
      PlainBackend be;
      (void)RowMaxRank(be, std::vector<Ring64>(cols, 1), 1, cols, 40, g);
      std::uint64_t wins = 0;
      const MaxTheory t = RowMaxRankTheory(cols, g, &wins);
      EXPECT_EQ(be.counts().cmp_elems, t.cmp_per_row + wins) << cols << " " << m;
      EXPECT_EQ(t.cmp_per_row, c.pairs) << cols << " " << m;
    }
  }
}

TEST(FixedMath, SoftmaxOpCounts) {
  FixedMathParams p;
  FixedMath fm(p);
  const std::size_t rows = 2, cols = 100;
  std::vector<Ring64> x(rows * cols, 0);
  fm.Softmax(x, rows, cols);
  const auto& k = fm.backend().counts();
  // ranked max (groups of up to 24: RankGroup takes two levels of 10, 12 rounds): 100 columns
  // are 10 groups of 10 (450 pairs) plus 100 wins, then one group of 10 (45 pairs, 10 wins):
  // 605 comparisons per row in 4 batches, 2 product batches; exp: cols per row; reciprocal over [1,
  // 2^7]: 7 S - 1 per row, its linear start and 2 products per Newton step, e times 1/sum folded
  // into the last.
  ASSERT_EQ(p.softmax_max_group, 24);
  EXPECT_EQ(k.cmp_elems, rows * 605 + rows * cols + rows * (7 * p.recip_sub_buckets - 1));
  EXPECT_EQ(k.cmp_batches, 4u + 1 + 1);
  EXPECT_EQ(k.mul_batches, 2u + (p.exp_squarings + 3) + 1 + 2 * p.recip_iterations);
}

TEST(FixedMath, RmsNorm) {
  for (const auto& c : Cases()) {
    auto fm = Make(c);
    FixedPoint fp{c.params.frac_bits};
    Prg prg(TestSeed(5));
    double worst = 0;
    for (std::size_t cols : {64u, 288u, 4096u}) {
      for (double scale : {0.05, 1.0, 30.0}) {
        std::vector<double> xs(cols), gs(cols);
        for (auto& v : xs) v = (prg.NextDouble() * 2 - 1) * scale;
        for (auto& g : gs) g = 0.5 + prg.NextDouble();
        auto out = fm.RmsNorm(Encode(fp, xs), Encode(fp, gs), 1, cols, 1e-5);
        double ss = 0;
        for (double v : xs) ss += fp.Decode(fp.Encode(v)) * fp.Decode(fp.Encode(v));
        const double inv = 1 / std::sqrt(ss / cols + 1e-5);
        for (std::size_t i = 0; i < cols; ++i) {
          const double want = fp.Decode(fp.Encode(gs[i])) * fp.Decode(fp.Encode(xs[i])) * inv;
          // Relative to the output plus 4 ulp: mean squares down to 8e-4 are tested.
          const double err = std::abs(fp.Decode(out[i]) - want);
          worst = std::max(worst, err);
          EXPECT_LE(err, 1e-4 * std::abs(want) + 4 * fp.Ulp()) << cols << " " << scale;
        }
      }
    }
    std::cout << "rmsnorm " << c.Name() << " max_abs_error " << worst << "\n";
  }
}

TEST(FixedMath, RmsNormOpCounts) {
  FixedMathParams p;
  for (std::size_t cols : {64u, 288u}) {
    FixedMath fm(p);
    const std::size_t rows = 3;
    std::vector<Ring64> x(rows * cols, FixedPoint{p.frac_bits}.Encode(0.5));
    std::vector<Ring64> g(cols, FixedPoint{p.frac_bits}.Encode(1.0));
    auto out = fm.RmsNorm(x, g, rows, cols, 1e-5);
    EXPECT_NEAR(FixedPoint{p.frac_bits}.Decode(out[0]), 1.0, 1e-4);
    const auto& k = fm.backend().counts();
    EXPECT_EQ(k.cmp_elems,
              rows * ((p.rsqrt_log2_max - p.rsqrt_log2_min) * p.rsqrt_sub_buckets - 1));
    EXPECT_EQ(k.cmp_batches, 1u);
    ASSERT_EQ(p.rsqrt_iterations, 1);
    // x x and x g in one batch; rsqrt's start; its one Newton step on the rows alone: v y,
    // (v y) y, y (3 - v y^2); then x g times the finished y (a broadcast: not folded).
    EXPECT_EQ(k.mul_batches, 1u + 1 + 3 + 1);
    EXPECT_EQ(k.mul_elems, 2 * rows * cols + rows + rows + rows + rows + rows * cols);
    // The two halves of the product batch, and two on the mean square (a power of two: the
    // start's copy and the Newton steps' copy; otherwise the division and the scaling).
    EXPECT_EQ(k.trunc_batches, 4u);
  }
}

}  // namespace
}  // namespace mpcache
