#include "common/fixed_math.h"

#include <algorithm>
#include <string>

namespace mpcache {

Status FixedMathParams::Validate() const {
  const auto bad = [](const std::string& m) { return Status(InvalidArgument(m)); };
  if (frac_bits < 8 || frac_bits > 24) {
    return bad("fixed point: frac_bits must be in [8, 24], got " + std::to_string(frac_bits));
  }
  if (exp_squarings < 1 || exp_squarings > 12 || exp_clip < 1 || exp_clip > (1 << exp_squarings)) {
    return bad("fixed point: exp needs 1 <= exp_squarings <= 12 and 1 <= exp_clip <= 2^n");
  }
  if (exp_frac_bits > 25 || exp_frac_bits < frac_bits + exp_squarings) {
    return bad("fixed point: exp_frac_bits must be in [frac_bits + exp_squarings, 25], got " +
               std::to_string(exp_frac_bits));
  }
  if (recip_frac_bits > 30 || recip_frac_bits < frac_bits || recip_iterations < 0 ||
      sigmoid_recip_iterations < 0) {
    return bad("fixed point: recip_frac_bits must be in [frac_bits, 30], iterations >= 0");
  }
  if (recip_sub_buckets < 1 || recip_sub_buckets > 64 || rsqrt_sub_buckets < 1 ||
      rsqrt_sub_buckets > 64) {
    return bad("fixed point: recip_sub_buckets and rsqrt_sub_buckets must be in [1, 64]");
  }
  if (rsqrt_log2_min < -frac_bits + 2 || rsqrt_log2_max > 30 ||
      rsqrt_log2_max < rsqrt_log2_min + 2 || rsqrt_iterations < 0) {
    return bad("fixed point: rsqrt domain [2^lo, 2^hi] needs -frac_bits+2 <= lo, lo+2 <= hi <= 30");
  }
  if (rank_round_cost < 0 || rank_round_cost > kMaxRoundCost) {
    return bad("fixed point: rank_round_cost must be in [0, 2^24], got " +
               std::to_string(rank_round_cost));
  }
  if (argmax_round_cost < 0 || argmax_round_cost > kMaxRoundCost) {
    return bad("fixed point: argmax_round_cost must be in [0, 2^24], got " +
               std::to_string(argmax_round_cost));
  }
  if (silu_round_cost < 0 || silu_round_cost > kMaxRoundCost) {
    return bad("fixed point: silu_round_cost must be in [0, 2^24], got " +
               std::to_string(silu_round_cost));
  }
  if (softmax_max_group < 2 || softmax_max_group > 64) {
    return bad("fixed point: softmax_max_group must be in [2, 64], got " +
               std::to_string(softmax_max_group));
  }
  if (argmax_group < 2 || argmax_group > 64) {
    return bad("fixed point: argmax_group must be in [2, 64], got " + std::to_string(argmax_group));
  }
  if (compare_bits < frac_bits + 8 || compare_bits > 64) {
    return bad("fixed point: compare_bits must be in [frac_bits + 8, 64], got " +
               std::to_string(compare_bits));
  }
  if (RsqrtFracBits() < frac_bits) {
    return bad("fixed point: rsqrt_log2_min too small for frac_bits (internal precision " +
               std::to_string(RsqrtFracBits()) + " < frac_bits)");
  }
  return Status::Ok();
}

int FixedMathParams::RsqrtFracBits() const {
  // y <= 1.05 * 2^(-lo/2), so y^2 * 2^(2 fr) < 2^61 needs fr <= (60 + lo) / 2.
  return std::min(28, (60 + rsqrt_log2_min) / 2);
}

FixedOpCounts& FixedOpCounts::operator+=(const FixedOpCounts& o) {
  mul_batches += o.mul_batches;
  mul_elems += o.mul_elems;
  trunc_batches += o.trunc_batches;
  trunc_elems += o.trunc_elems;
  cmp_batches += o.cmp_batches;
  cmp_elems += o.cmp_elems;
  return *this;
}

namespace fixed_detail {
int CeilLog2(std::size_t n) {
  int k = 0;
  while ((std::size_t{1} << k) < n) ++k;
  return k;
}
}  // namespace fixed_detail

PlainBackend::PlainBackend(std::uint64_t noisy_trunc_seed)
    : noise_(std::make_shared<Prg>(TestSeed(noisy_trunc_seed))) {}

PlainBackend::Vec PlainBackend::Add(const Vec& a, const Vec& b) const {
  Vec out(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) out[i] = a[i] + b[i];
  return out;
}

PlainBackend::Vec PlainBackend::Sub(const Vec& a, const Vec& b) const {
  Vec out(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) out[i] = a[i] - b[i];
  return out;
}

PlainBackend::Vec PlainBackend::AddConst(const Vec& a, Ring64 c) const {
  Vec out(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) out[i] = a[i] + c;
  return out;
}

PlainBackend::Vec PlainBackend::MulConst(const Vec& a, Ring64 c) const {
  Vec out(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) out[i] = a[i] * c;
  return out;
}

PlainBackend::Vec PlainBackend::MulPublic(const Vec& a, std::span<const Ring64> c) const {
  Vec out(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) out[i] = a[i] * c[i];
  return out;
}

Ring64 PlainBackend::TruncOne(Ring64 v, int bits) {
  Ring64 t = FixedPoint::Truncate(v, bits);
  if (noise_ != nullptr && bits > 0) t += noise_->NextU64() & 1;
  return t;
}

PlainBackend::Vec PlainBackend::Trunc(const Vec& a, int bits) {
  ++counts_.trunc_batches;
  counts_.trunc_elems += a.size();
  Vec out(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) out[i] = TruncOne(a[i], bits);
  return out;
}

PlainBackend::Vec PlainBackend::Mul(const Vec& a, const Vec& b) {
  ++counts_.mul_batches;
  counts_.mul_elems += a.size();
  Vec out(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) out[i] = a[i] * b[i];
  return out;
}

PlainBackend::Vec PlainBackend::Square(const Vec& a) {
  return Mul(a, a);
}

PlainBackend::Vec PlainBackend::MulAndSquare(const Vec& a, const Vec& b, const Vec& c) {
  return Mul(Concat(a, c), Concat(b, c));
}

PlainBackend::Vec PlainBackend::MulTrunc(const Vec& a, const Vec& b, int bits) {
  ++counts_.mul_batches;
  counts_.mul_elems += a.size();
  Vec out(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) out[i] = TruncOne(a[i] * b[i], bits);
  return out;
}

PlainBackend::Vec PlainBackend::MulPairs(const Vec& a, const Vec& b, std::size_t /*from*/,
                                         std::size_t /*count*/, int bits) {
  return bits > 0 ? MulTrunc(a, b, bits) : Mul(a, b);
}

PlainBackend::Vec PlainBackend::IsNegative(const Vec& a, int bits) {
  ++counts_.cmp_batches;
  counts_.cmp_elems += a.size();
  // Bit bits-1: the sign of a as a `bits`-bit two's complement number (what the secure
  // comparison computes for every input, in range or not).
  const int top = std::clamp(bits, 1, 64) - 1;
  Vec out(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) out[i] = (a[i] >> top) & 1;
  return out;
}

PlainBackend::Vec PlainBackend::IsNegativeEach(const Vec& a, std::span<const Ring64> c, int bits) {
  Vec shifted(a.size() * c.size());
  for (std::size_t i = 0; i < c.size(); ++i) {
    for (std::size_t r = 0; r < a.size(); ++r) shifted[i * a.size() + r] = a[r] + c[i];
  }
  return IsNegative(shifted, bits);
}

PlainBackend::Vec PlainBackend::Gather(const Vec& a, std::span<const std::size_t> idx) const {
  Vec out(idx.size());
  for (std::size_t i = 0; i < idx.size(); ++i) out[i] = a[idx[i]];
  return out;
}

PlainBackend::Vec PlainBackend::Concat(const Vec& a, const Vec& b) const {
  Vec out(a);
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

PlainBackend::Vec PlainBackend::RowSum(const Vec& a, std::size_t cols) const {
  Vec out(cols == 0 ? 0 : a.size() / cols, 0);
  for (std::size_t i = 0; i < out.size() * cols; ++i) out[i / cols] += a[i];
  return out;
}

PlainBackend::Vec PlainBackend::GatherSum(const Vec& a, const SparseRows& m) const {
  Vec out(m.rows(), 0);
  for (std::size_t r = 0; r < out.size(); ++r) {
    for (std::size_t k = m.off[r]; k < m.off[r + 1]; ++k) out[r] += m.coef[k] * a[m.idx[k]];
  }
  return out;
}

}  // namespace mpcache
