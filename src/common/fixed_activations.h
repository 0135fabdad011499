// exp, sigmoid and SiLU over the fixed-point backend (common/fixed_backend.h). SiluTimes(x, h)
// is the FFN gate SiLU(x) * h with the product by h folded into the kernel's own batches.
// docs/fixed-point.md states the error bounds and op counts.
#pragma once

#include <cstddef>
#include <vector>

#include "common/fixed_backend.h"
#include "common/fixed_inverse.h"

namespace mpcache {

namespace fixed_detail {

// exp(x) for x <= 0 with the clip bit given (below = [x < -exp_clip]), result at out_frac
// bits. The base 1 + z + z^2 (1/2 + z/6 + z^2/24) of z = x / 2^n (fourth-order Taylor, |z|
// <= 1) is squared n times; clipped inputs give base^(2^n) (1 - below) = 0. `x_sq`, when
// given, is x^2 at 2f bits from the caller's own product batch (so z^2 costs no batch here);
// products extra_a * extra_b (truncated by exp_frac_bits) ride in the z^2 w batch and are
// returned in *extra_out; extra_b's elements extra_pairs + k repeat its elements k (k <
// extra_pairs: MulPairs opens each such factor once). n + 3 product batches (n + 2 with
// x_sq), no comparison.
template <typename B>
typename B::Vec ExpClipped(B& be, const FixedMathParams& p, const typename B::Vec& x,
                           const typename B::Vec& below, int out_frac,
                           const typename B::Vec* x_sq = nullptr,
                           const typename B::Vec* extra_a = nullptr,
                           const typename B::Vec* extra_b = nullptr,
                           typename B::Vec* extra_out = nullptr, std::size_t extra_pairs = 0) {
  const int f = p.frac_bits, n = p.exp_squarings, fe = p.exp_frac_bits;
  const int fk = p.ExpCoefBits();
  const std::size_t count = B::Size(x);
  // z = x / 2^n at fe bits: exact (local multiplication by 2^(fe - f - n)).
  auto z = be.MulConst(x, Ring64{1} << (fe - f - n));
  typename B::Vec z2;  // z^2 at fe bits
  if (x_sq != nullptr) {
    // z^2 2^fe = x^2 2^(2f) 2^(fe - 2f - 2n).
    const int shift = 2 * f + 2 * n - fe;
    z2 = shift >= 0 ? be.Trunc(*x_sq, shift) : be.MulConst(*x_sq, Ring64{1} << -shift);
  } else {
    z2 = be.Trunc(be.Square(z), fe);
  }
  // w = 1/2 + z/6 + z^2/24 at fe + fk bits; base = 1 + z + z^2 w at fe bits.
  auto w = be.AddConst(
      be.Add(be.MulConst(z, EncodeAt(1.0 / 6.0, fk)), be.MulConst(z2, EncodeAt(1.0 / 24.0, fk))),
      Ring64{1} << (fe + fk - 1));
  typename B::Vec z2w;
  if (extra_a != nullptr) {
    auto both = be.MulPairs(be.Concat(z2, *extra_a), be.Concat(w, *extra_b), count, extra_pairs);
    z2w = be.Trunc(Slice(be, both, 0, count), fe + fk);
    *extra_out = be.Trunc(Slice(be, both, count, B::Size(*extra_a)), fe);
  } else {
    z2w = be.Trunc(be.Mul(z2, w), fe + fk);
  }
  auto base = be.AddConst(be.Add(z, z2w), Ring64{1} << fe);
  for (int i = 0; i < n; ++i) {
    const int bits = (i + 1 == n) ? 2 * fe - out_frac : fe;  // last one lands at out_frac
    base = be.Trunc(be.Square(base), bits);
  }
  if (n == 0) base = be.Trunc(base, fe - out_frac);
  return be.Mul(base, OneMinus(be, below));
}

}  // namespace fixed_detail

// exp(x) for x <= 0 (x at f bits; inputs > 0 are outside the domain), result at out_frac
// bits (f <= out_frac <= exp_frac_bits). One comparison per element; n + 3 product batches.
template <typename B>
typename B::Vec Exp(B& be, const FixedMathParams& p, const typename B::Vec& x, int out_frac) {
  auto below = be.IsNegative(be.AddConst(x, fixed_detail::EncodeAt(p.exp_clip, p.frac_bits)),
                             p.compare_bits);
  return fixed_detail::ExpClipped(be, p, x, below, out_frac);
}

template <typename B>
typename B::Vec Exp(B& be, const FixedMathParams& p, const typename B::Vec& x) {
  return Exp(be, p, x, p.frac_bits);
}

// What the sigmoid core multiplies q = e / (1 + e) by (e = exp(-|x|)).
enum class SigmoidUse {
  kSigmoid,    // q = e * 1/(1 + e) itself, at exp_frac_bits
  kSilu,       // |x| q at f bits
  kSiluTimes,  // |x| h q and relu(x) h at f bits
};

template <typename B>
struct SigmoidParts {
  typename B::Vec s, sx;   // [x < 0] and s x
  typename B::Vec qm;      // q (kSigmoid, at exp_frac_bits), |x| q or |x| h q (at f bits)
  typename B::Vec relu_h;  // kSiluTimes: relu(x) h at f bits
};

// Whether sigmoid / SiLU of n elements compares in two batches, [x < 0] and then
// [clip - |x| < 0] (2 comparisons per element, 3 more rounds), rather than in one of 3 per
// element: when the comparisons saved outweigh the rounds at silu_round_cost comparisons
// per round (FixedMathParams).
inline bool SigmoidSignFirst(const FixedMathParams& p, std::size_t n) {
  return p.silu_round_cost > 0 && n > 3 * static_cast<std::size_t>(p.silu_round_cost);
}

// The parts sigmoid and SiLU share, for x at f bits. The comparisons give s = [x < 0] and the
// clip bit of exp(-|x|), [|x| > clip]: either ONE batch of [x | x + clip | clip - x]
// ([|x| > clip] = [x < -clip] + [x > clip]), or (SigmoidSignFirst, wide inputs) [x < 0] first
// and [clip - |x| < 0] after the product batch below gives -|x| = 2 s x - x: a third fewer
// comparison tuples (the malicious FFN's largest dealer cost) for 3 rounds. sx = s x (exact);
// e = exp(-|x|) at exp_frac_bits; q m = m e / (1 + e) by the reciprocal on [1, 2] (one linear
// start, no comparison, sigmoid_recip_iterations steps, the multiplier folded into the last).
// kSiluTimes computes relu(x) h and |x| h inside exp's first product batch and |x| h e inside
// the reciprocal's first one.
template <typename B>
SigmoidParts<B> SigmoidCore(B& be, const FixedMathParams& p, const typename B::Vec& x,
                            SigmoidUse use, const typename B::Vec* h = nullptr) {
  using fixed_detail::EncodeAt;
  using fixed_detail::Slice;
  const int f = p.frac_bits, fs = p.exp_frac_bits;
  const std::size_t n = B::Size(x);
  const Ring64 clip = EncodeAt(p.exp_clip, f);
  const bool sign_first = SigmoidSignFirst(p, n);
  SigmoidParts<B> out;
  typename B::Vec below;
  if (sign_first) {
    out.s = be.IsNegative(x, p.compare_bits);
  } else {
    auto plus = be.AddConst(x, clip);                                      // x + clip
    auto minus = be.AddConst(be.MulConst(x, fixed_detail::Neg(1)), clip);  // clip - x
    auto cmp = be.IsNegative(be.Concat(be.Concat(x, plus), minus), p.compare_bits);
    out.s = Slice(be, cmp, 0, n);
    below = be.Add(Slice(be, cmp, n, n), Slice(be, cmp, 2 * n, n));
  }
  // One product batch: s x (exact) and x^2 (= |x|^2, exp's z^2 without a batch of its own),
  // a square: x opened twice per element, not three times.
  auto first = be.MulAndSquare(out.s, x, x);
  out.sx = Slice(be, first, 0, n);
  const auto x_sq = Slice(be, first, n, n);
  auto neg_abs = be.Sub(be.MulConst(out.sx, 2), x);  // -|x| = 2 s x - x
  if (sign_first) below = be.IsNegative(be.AddConst(neg_abs, clip), p.compare_bits);
  auto abs = be.MulConst(neg_abs, fixed_detail::Neg(1));
  typename B::Vec e, abs_h;
  if (use == SigmoidUse::kSiluTimes) {
    // relu(x) h and |x| h at f: the first factor is scaled to fe bits, the batch truncates by fe.
    // A pair per element: h opened once for both products.
    const Ring64 up = Ring64{1} << (fs - f);
    auto lhs = be.Concat(be.MulConst(be.Sub(x, out.sx), up), be.MulConst(abs, up));
    auto rhs = be.Concat(*h, *h);
    typename B::Vec extra;
    e = fixed_detail::ExpClipped(be, p, neg_abs, below, fs, &x_sq, &lhs, &rhs, &extra, n);
    out.relu_h = Slice(be, extra, 0, n);
    abs_h = Slice(be, extra, n, n);
  } else {
    e = fixed_detail::ExpClipped(be, p, neg_abs, below, fs, &x_sq);
  }
  auto d = be.AddConst(e, Ring64{1} << fs);  // 1 + e in [1, 2]
  Multiplier<B> mult;
  mult.bcast.resize(n);
  for (std::size_t i = 0; i < n; ++i) mult.bcast[i] = i;
  if (use == SigmoidUse::kSigmoid) {
    mult.m = &e;
    mult.m_frac = fs;
  } else {
    mult.m = use == SigmoidUse::kSilu ? &abs : &abs_h;  // times e, truncated by fs: at f
    mult.m_b = &e;
    mult.m_frac = f;
  }
  out.qm = ReciprocalTimes(be, p, d, fs, 1, 1, p.sigmoid_recip_iterations, mult, mult.m_frac);
  return out;
}

// sigmoid(x) at f bits: 1 - q + s (2q - 1).
template <typename B>
typename B::Vec Sigmoid(B& be, const FixedMathParams& p, const typename B::Vec& x) {
  using fixed_detail::Neg;
  const int fs = p.exp_frac_bits, f = p.frac_bits;
  auto parts = SigmoidCore(be, p, x, SigmoidUse::kSigmoid);
  auto one_minus_q = be.AddConst(be.MulConst(parts.qm, Neg(1)), Ring64{1} << fs);
  auto two_q_minus_1 = be.AddConst(be.MulConst(parts.qm, 2), Neg(Ring64{1} << fs));
  auto sig = be.Add(one_minus_q, be.Mul(parts.s, two_q_minus_1));
  return be.Trunc(sig, fs - f);
}

// SiLU(x) = x sigmoid(x) = relu(x) - |x| q, at f bits.
template <typename B>
typename B::Vec Silu(B& be, const FixedMathParams& p, const typename B::Vec& x) {
  auto parts = SigmoidCore(be, p, x, SigmoidUse::kSilu);
  return be.Sub(be.Sub(x, parts.sx), parts.qm);
}

// SiLU(x) h = relu(x) h - |x| h q at f bits (x, h at f bits; the FFN gate): the same batches
// as Silu, the products by h inside them.
template <typename B>
typename B::Vec SiluTimes(B& be, const FixedMathParams& p, const typename B::Vec& x,
                          const typename B::Vec& h) {
  auto parts = SigmoidCore(be, p, x, SigmoidUse::kSiluTimes, &h);
  return be.Sub(parts.relu_h, parts.qm);
}

}  // namespace mpcache
