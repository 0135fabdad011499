// SecureBackend<P>: the arithmetic backend of common/fixed_math.h over secret shares, so
// that Exp, Reciprocal, Rsqrt, Sigmoid, Silu, Softmax, RowMax and RmsNorm run securely as
// the very same templates the plaintext PlainBackend runs (identical op sequence; results
// differ from PlainBackend only by the +-1 LSB of each probabilistic truncation).
//
// Values are LazyShares (mpc/lazy_shares.h): a truncation is not opened when it is asked
// for but rides on the next exchange — in a product it is fused with the product's own
// opening (mpc/fused_product.h), in a comparison with the comparison's opening when that
// is narrow enough, otherwise on whatever exchange the session makes next. So Trunc costs
// no round and MulTrunc one.
//
// Cost of each call (per party, all-to-all openings, figures sent to each of 2 peers), with
// B = OpenBytes<P>() bytes per full-width opened value (14 malicious, 8 semi-honest):
//   Add, Sub, AddConst, MulConst, Gather, Concat, Trunc: local
//   RowSum: local, unless a summed element still has a pending truncation (then a flush)
//   Mul / MulTrunc / Square (n): 1 round; one opened value per operand component per
//                    element (FusedOpenings: a plain part 1, a pending truncation 1;
//                    a square's operand once; MulPairs: a pair's shared right operand
//                    once); B each. Elements where an operand is public are local.
//   IsNegative(n, l): LtzRounds(l) rounds, LtzBytesPerPeer(n, l, OpenBytes<P>(l)), plus one
//                    full-width value per element whose pending truncation it opens (when
//                    63 - f + v2(coef) >= l, so that the truncation's wrap term vanishes
//                    mod 2^l; otherwise a flush first)
//   a flush: 1 round, B per value (only when an operation cannot take a pending truncation
//            in: counted in flushes())
//   and every exchange also carries the pending truncations of the session that are
//   waiting (B each, counted where they ride).
//
// The fixed_math backend concept has no error channel, so errors are sticky: the first
// failing call records its Status, every later communicating call returns zeros at once
// without communicating, and the caller must check status() after the kernel (the engine
// does so before anything is released; a failed MAC check also blocks every later open).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "common/fixed_math.h"
#include "mpc/compare/compare.h"
#include "mpc/fused_product.h"
#include "mpc/lazy_shares.h"

namespace mpcache::mpc {

template <typename P>
class SecureBackend {
 public:
  using Vec = LazyShares<P>;

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
  // Rounds spent only to open pending truncations that an operation could not take in.
  std::uint64_t flushes() const { return flushes_; }
  BinaryContext<P>& context() { return ctx_; }

  static std::size_t Size(const Vec& a) { return a.size(); }
  Vec Add(const Vec& a, const Vec& b);
  Vec Sub(const Vec& a, const Vec& b);
  Vec AddConst(const Vec& a, Ring64 c) const;
  Vec MulConst(const Vec& a, Ring64 c) const;
  // Elementwise times public c (c.size() == a.size()). Local; elements whose pending
  // truncation an earlier exchange opened take it in first, so that a Trunc of the result
  // composes (a pending term times c_i != 1 could not).
  Vec MulPublic(const Vec& a, std::span<const Ring64> c) const;
  Vec Trunc(const Vec& a, int bits);
  Vec Mul(const Vec& a, const Vec& b);
  Vec Square(const Vec& a);
  Vec MulAndSquare(const Vec& a, const Vec& b, const Vec& c);
  Vec MulTrunc(const Vec& a, const Vec& b, int bits);
  // Mul (bits 0) or MulTrunc where b's element from + count + k is declared to be its element
  // from + k (k < count): each such pair of products is one fused pair, the right operand
  // opened once for both (an element whose factors are public, or whose two right elements
  // differ in their public structure, is multiplied alone).
  Vec MulPairs(const Vec& a, const Vec& b, std::size_t from, std::size_t count, int bits = 0);
  Vec IsNegative(const Vec& a, int bits);
  // [a_r + c_i < 0] at i n + r: one comparison batch whose elements share a's pending terms
  // (each handled once per element of a, whatever the number of offsets).
  Vec IsNegativeEach(const Vec& a, std::span<const Ring64> c, int bits);
  Vec Gather(const Vec& a, std::span<const std::size_t> idx) const;
  Vec Concat(const Vec& a, const Vec& b) const;
  Vec RowSum(const Vec& a, std::size_t cols);
  // A zero coefficient drops its term (its share part does not count in has_s either).
  Vec GatherSum(const Vec& a, const SparseRows& m) const;

  // Plain shares of v: local when nothing in v is pending, else one flush round first.
  Shares<P> Materialize(const Vec& v);

 private:
  // Folds the pending terms whose truncation is known into the share part.
  void Normalize(Vec& v) const;
  static bool AnyPending(const Vec& v);
  // a + b, or a - b when `minus`, of same-sized vectors with no pending term.
  static Vec PlainSum(const Vec& a, const Vec& b, bool minus);
  // GatherSum of a vector with no pending term.
  static Vec PlainGatherSum(const Vec& a, const SparseRows& m);
  // Opens every waiting truncation now (1 round if there is any), then normalizes `vs`.
  void Flush(std::initializer_list<Vec*> vs);
  // A product batch: b == nullptr squares a.
  // a * b (b null: a squared); with b, elements from `squares_from` on are squares of a's
  // (b holds the same values there).
  Vec Product(const Vec& a, const Vec* b, std::size_t squares_from = SIZE_MAX,
              std::size_t pair_from = 0, std::size_t pair_count = 0);
  // Trunc's case of one new source for the whole vector (see secure_backend.cc); nullopt:
  // the general case. Takes x's share part when it does.
  std::optional<Vec> OneSourceTrunc(Vec& x, int bits);
  // Product's batch of operands whose elements all have the components lc / rc (one source
  // each for a pending part): no per-element bookkeeping. y == nullptr squares x.
  Vec UniformProduct(const Vec& x, const Vec* y, std::uint8_t lc, std::uint8_t rc);
  // Opens `batch` (of `openings` values) and charges its round and bytes; false (status
  // failed) when the exchange fails.
  bool ExchangeBatch(FusedBatch<P>& batch, std::uint64_t openings);
  // IsNegative (c empty) and IsNegativeEach.
  Vec CompareEach(const Vec& a, std::span<const Ring64> c, int bits);
  void Fail(const Status& s) {
    if (status_.ok()) status_ = s;
  }
  void Charge(std::uint64_t rounds, std::uint64_t bytes) {
    theory_.rounds += rounds;
    theory_.bytes_sent += bytes;
  }
  // Deferred values that went all-to-all so far (those that rode a split-king opening are
  // in that opening's cost).
  std::uint64_t BroadcastDeferred() const {
    return ctx_.arith().deferred_opened() - ctx_.arith().deferred_in_split();
  }
  // Charges the all-to-all deferred values opened since `before` (2 peers, B each).
  void ChargeDeferred(std::uint64_t before) {
    Charge(0, 2 * OpenBytes<P>() * (BroadcastDeferred() - before));
  }

  BinaryContext<P>& ctx_;
  Status status_;
  FixedOpCounts counts_;
  Theory theory_;
  std::uint64_t flushes_ = 0;
};

}  // namespace mpcache::mpc
