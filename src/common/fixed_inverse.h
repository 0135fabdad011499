// 1/d and 1/sqrt(v) over the fixed-point backend (common/fixed_backend.h): bucketing by
// public thresholds (one comparison batch), a minimax linear start per bucket (selected
// locally), Newton iterations. The "Times" forms return m * (1/d) or m * (1/sqrt(v)) for a
// multiplier m with one value per element of a row, folding the product into the last
// iteration so that it costs no product batch of its own. docs/fixed-point.md states the
// error bounds and op counts.
#pragma once

#include <cmath>
#include <cstddef>
#include <vector>

#include "common/fixed_backend.h"

namespace mpcache {

namespace fixed_detail {

// Buckets [a_i, a_i rho) with a_i = 2^(lo + i / S), i = 0 .. (hi - lo) S - 1, rho = 2^(1/S).
struct Buckets {
  std::vector<double> starts;  // a_i as decoded from their encodings at the input precision
  std::vector<Ring64> starts_enc;
  double rho = 2.0;
};
inline Buckets MakeBuckets(int lo, int hi, int per_octave, int in_frac) {
  Buckets b;
  b.rho = std::exp2(1.0 / per_octave);
  const int count = (hi - lo) * per_octave;
  for (int i = 0; i < count; ++i) {
    const Ring64 enc = EncodeAt(std::exp2(lo + static_cast<double>(i) / per_octave), in_frac);
    b.starts_enc.push_back(enc);
    b.starts.push_back(FixedPoint{in_frac}.Decode(enc));
  }
  return b;
}

// Minimax (relative error) line A - B x of 1/x and of 1/sqrt(x) on [1, rho]: the relative
// error equioscillates at both ends and at the interior extremum.
struct Line {
  double a = 0, b = 0, error = 0;
};
inline Line RecipLine(double rho) {
  const double a = 2.0 / (rho / (1.0 + rho) + (1.0 + rho) / 4.0);  // rho = 2: 24/17
  return {a, a / (1.0 + rho), 1.0 - a * rho / (1.0 + rho)};
}
inline Line RsqrtLine(double rho) {
  const double s = std::sqrt(rho);
  const double k = (1.0 - s) / (1.0 - rho * s);  // B = k A from the two end conditions
  const double a = 2.0 / (1.0 - k + (2.0 / 3.0) / std::sqrt(3.0 * k));
  return {a, k * a, 1.0 - a * (1.0 - k)};
}

// Bits b_i = [v >= a_i] for every bucket start but the first (v at the starts' precision),
// one comparison batch of `bits`-bit values; returned i-major: bit i of element r at
// (i - 1) * n + r. None when there is one bucket.
template <typename B>
typename B::Vec StartBits(B& be, const typename B::Vec& v, const Buckets& buckets, int bits) {
  if (buckets.starts_enc.size() < 2) return typename B::Vec{};
  // v against every start but the first: v's pending terms (a wide norm's mean square
  // carries one per column) enter the batch once, not once per start.
  std::vector<Ring64> neg_starts;
  for (std::size_t i = 1; i < buckets.starts_enc.size(); ++i) {
    neg_starts.push_back(Neg(buckets.starts_enc[i]));
  }
  return OneMinus(be, be.IsNegativeEach(v, neg_starts, bits));
}

// c_0 + sum_i bits_i (c_i - c_{i-1}): the bucket's constant (all local); consts.size() >= 2
// and bits from StartBits with consts.size() buckets.
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

// The start y0 = A'_i - B_i (v - a_i) at out_frac bits for v at in_frac bits: the line
// A - B x on [1, rho] scaled to the bucket [a_i, a_i rho) (A_i = A a_scale(a_i), B_i =
// B b_scale(a_i)) and written around the bucket start, A'_i = A_i - B_i a_i. The product
// B_i (v - a_i) < B_i a_i (rho - 1) is small, so the slopes get ~log2(1 / (rho - 1)) more
// bits than B_i v would leave them. One comparison batch and one product batch; for a single
// bucket no comparison and one Trunc (the slope is public).
// With v_shift > 0, v is given at in_frac + v_shift bits: the bucket comparisons read it
// so (against cmp_buckets, the same buckets encoded at that precision), the start reads
// Trunc(v, v_shift) — truncated after the comparisons, which can then take in v's own
// pending truncations.
template <typename B, typename ScaleA, typename ScaleB>
typename B::Vec LinearStart(B& be, const typename B::Vec& v_in, int in_frac, const Buckets& buckets,
                            const Line& line, ScaleA a_scale, ScaleB b_scale, int out_frac,
                            int compare_bits, int v_shift = 0,
                            const Buckets* cmp_buckets = nullptr) {
  const std::size_t n = B::Size(v_in);
  // Largest slope product B_i (v - a_i) over the buckets, to choose the slopes' precision.
  double max_prod = 0;
  for (const double a : buckets.starts) {
    max_prod = std::max(max_prod, line.b * b_scale(a) * a * (buckets.rho - 1.0));
  }
  const int fb = static_cast<int>(std::floor(61.0 - in_frac - std::log2(max_prod)));
  std::vector<Ring64> a_consts, b_consts, s_consts;
  for (std::size_t i = 0; i < buckets.starts.size(); ++i) {
    const double a = buckets.starts[i];
    const double bi = line.b * b_scale(a);
    a_consts.push_back(EncodeAt(line.a * a_scale(a) - bi * a, out_frac));
    b_consts.push_back(EncodeAt(bi, fb));
    s_consts.push_back(buckets.starts_enc[i]);
  }
  if (buckets.starts.size() == 1) {
    const auto v = v_shift > 0 ? be.Trunc(v_in, v_shift) : v_in;
    auto off = be.AddConst(v, Neg(s_consts[0]));
    auto prod = be.Trunc(be.MulConst(off, b_consts[0]), fb + in_frac - out_frac);
    return be.AddConst(be.MulConst(prod, Neg(1)), a_consts[0]);
  }
  auto bits = StartBits(be, v_in, v_shift > 0 ? *cmp_buckets : buckets, compare_bits);
  const auto v = v_shift > 0 ? be.Trunc(v_in, v_shift) : v_in;
  auto a_sel = SelectConst(be, bits, n, a_consts);
  auto b_sel = SelectConst(be, bits, n, b_consts);
  auto off = be.Sub(v, SelectConst(be, bits, n, s_consts));
  return be.Sub(a_sel, be.MulTrunc(b_sel, off, fb + in_frac - out_frac));
}

}  // namespace fixed_detail

// A multiplier for the "Times" kernels: m (n values at m_frac bits, element i belongs to
// row bcast[i]), or — when m_b is set — the product m = m_a * m_b truncated by the kernel's
// in_frac, which the kernel computes inside one of its own product batches.
template <typename B>
struct Multiplier {
  const typename B::Vec* m = nullptr;    // or m_a, with m_b
  const typename B::Vec* m_b = nullptr;  // null: m is the multiplier itself
  int m_frac = 0;
  std::vector<std::size_t> bcast;
};

// m * (1/d) for d in [1, 2^log2_max] (rows values at in_frac <= 29 bits), result at out_frac
// bits; without a multiplier (mult.m null) 1/d itself (out_frac <= recip_frac_bits).
// `sub_buckets` buckets per power of two (k S - 1 comparisons per row, k = max(1,
// log2_max); none when k S = 1), `iterations` Newton steps; product batches: 1 + 2
// iterations (+1 when the multiplier is a product and iterations < 2).
template <typename B>
typename B::Vec ReciprocalTimes(B& be, const FixedMathParams& p, const typename B::Vec& d,
                                int in_frac, int log2_max, int sub_buckets, int iterations,
                                const Multiplier<B>& mult, int out_frac) {
  using fixed_detail::Neg;
  using fixed_detail::Slice;
  const int fy = p.recip_frac_bits;
  const int k = log2_max < 1 ? 1 : log2_max;
  const auto buckets = fixed_detail::MakeBuckets(0, k, sub_buckets, in_frac);
  const auto line = fixed_detail::RecipLine(buckets.rho);
  // |d - 2^j| < 2^(k + in_frac) inside the domain: that many bits + sign + slack.
  const int cmp_bits = std::min(64, k + in_frac + 2);
  auto y = fixed_detail::LinearStart(
      be, d, in_frac, buckets, line, [](double a) { return 1.0 / a; },
      [](double a) { return 1.0 / (a * a); }, fy, cmp_bits);
  const std::size_t rows = B::Size(d);
  const Ring64 two = Ring64{2} << fy;
  typename B::Vec m;  // the multiplier once known
  const bool has_m = mult.m != nullptr;
  const bool m_pending = has_m && mult.m_b != nullptr;
  if (has_m && !m_pending) m = *mult.m;
  if (m_pending && iterations < 2) m = be.MulTrunc(*mult.m, *mult.m_b, in_frac);
  if (iterations == 0) {
    if (!has_m) return be.Trunc(y, fy - out_frac);
    return be.MulTrunc(m, be.Gather(y, mult.bcast), mult.m_frac + fy - out_frac);
  }
  for (int i = 0; i + 1 < iterations; ++i) {
    typename B::Vec t;
    if (i == 0 && m_pending) {  // the multiplier's product rides in the first batch
      auto both = be.MulTrunc(be.Concat(d, *mult.m), be.Concat(y, *mult.m_b), in_frac);
      t = Slice(be, both, 0, rows);
      m = Slice(be, both, rows, B::Size(*mult.m));
    } else {
      t = be.MulTrunc(d, y, in_frac);
    }
    y = be.MulTrunc(y, be.AddConst(be.MulConst(t, Neg(1)), two), fy);  // y (2 - d y)
  }
  if (!has_m) {
    auto t = be.MulTrunc(d, y, in_frac);
    return be.MulTrunc(y, be.AddConst(be.MulConst(t, Neg(1)), two), 2 * fy - out_frac);
  }
  // Last step folded with the multiplier: m y' = (m y)(2 - d y). Elementwise (one element
  // of m per row), d y and m y are a pair: y opened once for both.
  const std::size_t n = B::Size(m);
  bool identity = n == rows;
  for (std::size_t i = 0; identity && i < n; ++i) identity = mult.bcast[i] == i;
  auto both = be.MulPairs(be.Concat(d, m), be.Concat(y, be.Gather(y, mult.bcast)), 0,
                          identity ? rows : 0, in_frac);
  auto t = Slice(be, both, 0, rows);                  // d y at fy
  auto my = Slice(be, both, rows, n);                 // m y at m_frac + fy - in_frac
  auto e = be.AddConst(be.MulConst(t, Neg(1)), two);  // 2 - d y at fy
  return be.MulTrunc(my, be.Gather(e, mult.bcast), mult.m_frac + 2 * fy - in_frac - out_frac);
}

// 1/d for d in [1, 2^log2_max] (d at in_frac <= 29 bits), result at out_frac fractional bits
// (out_frac <= recip_frac_bits): recip_sub_buckets per power of two, recip_iterations steps.
template <typename B>
typename B::Vec Reciprocal(B& be, const FixedMathParams& p, const typename B::Vec& d, int in_frac,
                           int log2_max, int out_frac) {
  return ReciprocalTimes(be, p, d, in_frac, log2_max, p.recip_sub_buckets, p.recip_iterations,
                         Multiplier<B>{}, out_frac);
}

template <typename B>
typename B::Vec Reciprocal(B& be, const FixedMathParams& p, const typename B::Vec& d,
                           int log2_max) {
  return Reciprocal(be, p, d, p.frac_bits, log2_max, p.frac_bits);
}

// m * 1/sqrt(v) for v in [2^rsqrt_log2_min, 2^rsqrt_log2_max] (rows values at in_frac bits,
// f <= in_frac <= f + 8), result at out_frac bits; without a multiplier 1/sqrt(v) itself
// (out_frac <= RsqrtFracBits()). (hi - lo) S - 1 comparisons per row (S =
// rsqrt_sub_buckets), 1 + 3 rsqrt_iterations product batches: each step is
// y' = y (3 - (v y) y) / 2, and the last one multiplies m y instead of y when m has one
// element per row; with a broadcast m (more elements than rows) one batch more, m y' last.
// With v_shift > 0, v is given at in_frac + v_shift bits (e.g. a sum whose own truncations
// the bucket comparisons then take in): the comparisons read it so, the Newton steps read
// Trunc(v, v_shift) at in_frac.
// The bucket comparisons are exact for v < 2^(hi + 1): one bit of headroom above the
// domain. When v carries pending truncations by `pending_shift` (> 0) that the comparisons
// could take in only without that bit (ComparisonTakesInTruncation: RmsNorm at C = 4096,
// f = 18), the bit is given up rather than paying a round to open the truncations first:
// exact then for v < 2^hi + 2^lo, the whole domain.
template <typename B>
typename B::Vec RsqrtTimes(B& be, const FixedMathParams& p, const typename B::Vec& v_in,
                           int in_frac, const Multiplier<B>& mult, int out_frac, int v_shift = 0,
                           int pending_shift = 0) {
  using fixed_detail::Neg;
  using fixed_detail::Slice;
  const int fr = p.RsqrtFracBits();
  const int lo = p.rsqrt_log2_min, hi = p.rsqrt_log2_max;
  const auto buckets = fixed_detail::MakeBuckets(lo, hi, p.rsqrt_sub_buckets, in_frac);
  const auto line = fixed_detail::RsqrtLine(buckets.rho);
  const int cf = in_frac + v_shift;
  const auto cmp_buckets = fixed_detail::MakeBuckets(lo, hi, p.rsqrt_sub_buckets, cf);
  // v - a_i in [-a_i, 2^hi - a_i) inside the domain: hi + cf bits + sign + headroom.
  const bool keep_headroom =
      pending_shift <= 0 || ComparisonTakesInTruncation(pending_shift, hi + cf + 2);
  const int cmp_bits = std::min(64, hi + cf + 1 + (keep_headroom ? 1 : 0));
  auto y = fixed_detail::LinearStart(
      be, v_in, in_frac, buckets, line, [](double a) { return 1.0 / std::sqrt(a); },
      [](double a) { return 1.0 / (a * std::sqrt(a)); }, fr, cmp_bits, v_shift, &cmp_buckets);
  // The Newton steps' v (LinearStart truncated its own copy after its comparisons).
  const auto v = v_shift > 0 ? be.Trunc(v_in, v_shift) : v_in;
  const std::size_t rows = B::Size(v);
  const bool has_m = mult.m != nullptr;
  if (p.rsqrt_iterations == 0) {
    if (!has_m) return be.Trunc(y, fr - out_frac);
    return be.MulTrunc(*mult.m, be.Gather(y, mult.bcast), mult.m_frac + fr - out_frac);
  }
  const Ring64 three = Ring64{3} << fr;
  // m y folds into the last step only when m is elementwise (one element per row): with a
  // real broadcast (RmsNorm: a row's y for all its columns) the row finishes y first and m
  // meets it once, one pending truncation per element, where the fold would open y and
  // 3 - v y^2 for every element of m (one round more, two or three opened values fewer).
  const bool fold = has_m && B::Size(*mult.m) <= rows;
  for (int i = 0; i < p.rsqrt_iterations; ++i) {
    const bool last = i + 1 == p.rsqrt_iterations;
    typename B::Vec vy, my;
    if (last && fold) {  // v y and m y in one batch
      auto both =
          be.MulTrunc(be.Concat(v, *mult.m), be.Concat(y, be.Gather(y, mult.bcast)), in_frac);
      vy = Slice(be, both, 0, rows);
      my = Slice(be, both, rows, B::Size(*mult.m));  // at m_frac + fr - in_frac
    } else {
      vy = be.MulTrunc(v, y, in_frac);  // at fr
    }
    auto h = be.MulTrunc(vy, y, fr);                      // v y^2 at fr
    auto t = be.AddConst(be.MulConst(h, Neg(1)), three);  // 3 - v y^2
    if (last && fold) {
      return be.MulTrunc(my, be.Gather(t, mult.bcast),
                         mult.m_frac + 2 * fr + 1 - in_frac - out_frac);
    }
    y = be.MulTrunc(y, t, last && !has_m ? 2 * fr + 1 - out_frac : fr + 1);
  }
  if (has_m) return be.MulTrunc(*mult.m, be.Gather(y, mult.bcast), mult.m_frac + fr - out_frac);
  return y;
}

template <typename B>
typename B::Vec Rsqrt(B& be, const FixedMathParams& p, const typename B::Vec& v, int in_frac,
                      int out_frac) {
  return RsqrtTimes(be, p, v, in_frac, Multiplier<B>{}, out_frac);
}

template <typename B>
typename B::Vec Rsqrt(B& be, const FixedMathParams& p, const typename B::Vec& v) {
  return Rsqrt(be, p, v, p.frac_bits, p.frac_bits);
}

}  // namespace mpcache
