// SecureBackend<P>: the arithmetic backend of common/fixed_math.h over secret shares, so
// that Exp, Reciprocal, Rsqrt, Sigmoid, Silu, Softmax, RowMax and RmsNorm run securely as
// the very same templates the plaintext PlainBackend runs (identical op sequence; results
// differ from PlainBackend only by the +-1 LSB of each probabilistic truncation).
//
// Cost of each call (per party, all-to-all openings, figures sent to each of 2 peers):
//   Add, Sub, AddConst, MulConst, Gather, Concat, RowSum: local
//   with B = OpenBytes<P>() bytes per opened value (16 malicious, 8 semi-honest):
//   Mul(n):          1 round, 2Bn bytes (Beaver)
//   Trunc(n):        1 round,  Bn bytes (dealer truncation pairs); 0 rounds for bits <= 0
//   MulTrunc(n):     2 rounds, 3Bn bytes (Beaver, then truncation: the truncation needs the
//                    product opened under a fresh mask, which needs the product first)
//   IsNegative(n, l): LtzRounds(l) rounds, LtzBytesPerPeer(n, l, OpenBytes<P>(l))
//                    (mpc/compare/compare.h)
//
// The fixed_math backend concept has no error channel, so errors are sticky: the first
// failing call records its Status, every later communicating call returns zeros at once
// without communicating, and the caller must check status() after the kernel (the engine
// does so before anything is released; a failed MAC check also blocks every later open).
#pragma once

#include <span>
#include <utility>
#include <vector>

#include "common/fixed_math.h"
#include "mpc/beaver.h"
#include "mpc/compare/compare.h"
#include "mpc/trunc.h"

namespace mpcache::mpc {

template <typename P>
class SecureBackend {
 public:
  using Vec = Shares<P>;

  explicit SecureBackend(BinaryContext<P>& ctx) : ctx_(ctx) {}

  const Status& status() const { return status_; }
  const FixedOpCounts& counts() const { return counts_; }
  void ResetCounts() { counts_ = {}; }
  // Rounds and bytes sent by this party that the calls so far must cost by the table above
  // (asserted against the measured CommStats in tests, reported by the benchmark).
  struct Theory {
    std::uint64_t rounds = 0;
    std::uint64_t bytes_sent = 0;
  };
  const Theory& theory() const { return theory_; }
  BinaryContext<P>& context() { return ctx_; }

  static std::size_t Size(const Vec& a) { return a.size(); }
  Vec Add(const Vec& a, const Vec& b) const { return mpc::Add(a, b); }
  Vec Sub(const Vec& a, const Vec& b) const { return mpc::Sub(a, b); }
  Vec AddConst(const Vec& a, Ring64 c) const {
    return AddPublic<P>(ctx_.arith().key(), a, std::span<const std::uint64_t>(&c, 1));
  }
  Vec MulConst(const Vec& a, Ring64 c) const {
    return MulPublic<P>(a, std::span<const std::uint64_t>(&c, 1));
  }

  Vec Trunc(const Vec& a, int bits) {
    counts_.trunc_batches += 1;
    counts_.trunc_elems += a.size();
    if (bits <= 0) return a;
    if (!status_.ok()) return Vec(a.size());
    Charge(1, 2 * OpenBytes<P>() * a.size());
    return Keep(mpc::Trunc(ctx_.arith(), a, bits), a.size());
  }
  Vec Mul(const Vec& a, const Vec& b) {
    counts_.mul_batches += 1;
    counts_.mul_elems += a.size();
    if (!status_.ok()) return Vec(a.size());
    Charge(1, 2 * 2 * OpenBytes<P>() * a.size());
    return Keep(mpc::Mul(ctx_.arith(), a, b), a.size());
  }
  Vec MulTrunc(const Vec& a, const Vec& b, int bits) {
    counts_.mul_batches += 1;
    counts_.mul_elems += a.size();
    if (!status_.ok()) return Vec(a.size());
    Charge(1, 2 * 2 * OpenBytes<P>() * a.size());
    Vec prod = Keep(mpc::Mul(ctx_.arith(), a, b), a.size());
    if (bits <= 0 || !status_.ok()) return prod;
    Charge(1, 2 * OpenBytes<P>() * a.size());
    return Keep(mpc::Trunc(ctx_.arith(), prod, bits), a.size());
  }
  Vec IsNegative(const Vec& a, int bits) {
    counts_.cmp_batches += 1;
    counts_.cmp_elems += a.size();
    if (!status_.ok()) return Vec(a.size());
    Charge(static_cast<std::uint64_t>(LtzRounds(bits)),
           2 * LtzBytesPerPeer(a.size(), bits, OpenBytes<P>(bits)));
    return Keep(LessThanZero(ctx_, a, bits), a.size());
  }

  Vec Gather(const Vec& a, std::span<const std::size_t> idx) const {
    Vec out(idx.size());
    for (std::size_t i = 0; i < idx.size(); ++i) out.v[i] = a.v[idx[i]];
    if constexpr (P::kMalicious) {
      for (std::size_t i = 0; i < idx.size(); ++i) out.m[i] = a.m[idx[i]];
    }
    return out;
  }
  Vec Concat(const Vec& a, const Vec& b) const {
    Vec out = a;
    out.Append(b);
    return out;
  }
  Vec RowSum(const Vec& a, std::size_t cols) const {
    const std::size_t rows = cols == 0 ? 0 : a.size() / cols;
    Vec out(rows);
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t c = 0; c < cols; ++c) out.v[r] += a.v[r * cols + c];
      if constexpr (P::kMalicious) {
        for (std::size_t c = 0; c < cols; ++c) out.m[r] += a.m[r * cols + c];
      }
    }
    return out;
  }

 private:
  // The value of a communicating call, or zeros once anything has failed (sticky).
  Vec Keep(Result<Vec> r, std::size_t n) {
    if (!status_.ok()) return Vec(n);
    if (!r.ok()) {
      status_ = r.error();
      return Vec(n);
    }
    return std::move(r).value();
  }

  void Charge(std::uint64_t rounds, std::uint64_t bytes) {
    theory_.rounds += rounds;
    theory_.bytes_sent += bytes;
  }

  BinaryContext<P>& ctx_;
  Status status_;
  FixedOpCounts counts_;
  Theory theory_;
};

}  // namespace mpcache::mpc
