// Fused products: Beaver products whose operands may still carry a pending truncation, in
// ONE round (docs/mpc-core.md "Fused products").
//
// A probabilistic truncation T_f(z) opens c = z + 2^62 + r and yields
//   T_f(z) = pub(c) + coef(c) [r_top] - [r_shift]            (mpc/trunc.h, TruncFromOpened)
// so a value u = p + s + k T_f(z) (p, k public; s shared) is, once c is known,
//   u = U0 + [a] - k [r_shift] + k coef(c) [r_top]    with U0 = p + (s - a) + k pub(c)
// a public number plus a public combination of three dealer randoms ("atoms"). A product
// u v of two such operands is then U0 V0 + U0 (v's atoms) + V0 (u's atoms) + the products
// of the atoms, which the dealer supplies ([a b], [r_shift b], [r_top b], ...: a fused
// triple, mpc/preprocessing.h). So the truncation of an operand and the product that
// consumes it share one opening round: the round opens s - a and z + 2^62 + r of each
// operand. A chain of truncated products costs one round per product instead of two.
//
// Cost per element (all-to-all; B = OpenBytes<P>() bytes per opened value, to each of the 2
// peers): one opened value per component of each operand (kS: s - a; kT: z + 2^62 + r),
// once for a square, once for a pair's shared right operand; no round of its own beyond the
// batch's one exchange. The truncated
// values T_f(z) of the kT parts come out as shares too (TakeTrunc).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "mpc/context.h"

namespace mpcache::mpc {

// One operand, elementwise: value_i = pub_i + (kS ? s_i : 0) + (kT ? coef_i T_bits(z_i) : 0).
template <typename P>
struct FusedOperand {
  std::uint8_t comps = 0;           // FusedShape::kS | kT (0 on the right: a square)
  std::vector<std::uint64_t> pub;   // public addends (empty: none)
  Shares<P> s;                      // kS
  Shares<P> z;                      // kT: the values to truncate
  int bits = 0;                     // kT: 1..61
  std::vector<std::uint64_t> coef;  // kT: the public coefficient of T_bits(z)

  std::size_t size() const {
    return (comps & FusedShape::kS) != 0 ? s.size() : (comps & FusedShape::kT) != 0 ? z.size() : 0;
  }
};

// Values each party opens (sends to each peer) for n fused products of `shape` (a pair: n
// elements of two products each, the right operand opened once for both).
constexpr std::uint64_t FusedOpenings(const FusedShape& shape, std::uint64_t n) {
  const auto count = [](std::uint8_t c) {
    return ((c & FusedShape::kS) != 0 ? 1u : 0u) + ((c & FusedShape::kT) != 0 ? 1u : 0u);
  };
  return n * (count(shape.left) + count(shape.right) + count(shape.left2));
}

template <typename P>
class FusedBatch {
 public:
  explicit FusedBatch(Context<P>& ctx) : ctx_(ctx) {}

  // Queues left * right (right.comps == 0: left squared). Returns a handle.
  std::size_t Add(FusedOperand<P> left, FusedOperand<P> right);
  // Queues a pair: left * right and left2 * right (right.comps != 0), the right operand
  // opened once for both products. Returns a handle.
  std::size_t AddPair(FusedOperand<P> left, FusedOperand<P> left2, FusedOperand<P> right);
  // Takes the fused triples and opens every job's masked values in one round.
  Status Exchange();
  // Results (moved out; once per handle, after Exchange()): the raw products (which 1: a
  // pair's left2 * right), and the truncations T_bits(z) of the left (side 0), right (side
  // 1) or a pair's second left (side 2) operand's kT part.
  Shares<P> TakeProduct(std::size_t handle, int which = 0) {
    return std::move(jobs_[handle].out[which]);
  }
  Shares<P> TakeTrunc(std::size_t handle, int side) { return std::move(jobs_[handle].trunc[side]); }

 private:
  struct Job {
    FusedOperand<P> op[3];  // left, right, a pair's second left
    FusedShape shape;
    Shares<P> out[2];
    Shares<P> trunc[3];
  };
  // A job of plain operands (shares only, no truncation part, no pair) and its products.
  static bool PlainJob(const Job& j);
  static void PlainProducts(Job& j, const FusedTriples<P>& t,
                            const std::array<const std::uint64_t*, 3>& e_s, bool p0, u128 alpha);

  Context<P>& ctx_;
  std::vector<Job> jobs_;
  bool done_ = false;
};

}  // namespace mpcache::mpc
