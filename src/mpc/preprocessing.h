// The online phase's view of preprocessing: one interface per party, whatever the source
// (the in-process dealer of preproc/, later a network dealer stream). Every item is
// move-only and handed out exactly once: a Get* call removes it from the party's pool, so a
// consumed item cannot be handed out again; a bounded pool that runs dry returns
// kExhausted (never a reused item).
//
// Items (all values in Z_2^64, shared as P says, MAC-authenticated for Spdz2k):
//   Triple       [a], [b], [c = a*b]
//   SquarePair   [a], [aa = a*a]
//   TruncPair    [r] (uniform), [r_top] = bit 63 of r, [r_shift] = (r mod 2^63) >> f
//   Bit          [b], b uniform in {0, 1}
//   Random       [r], r uniform (the MAC check's authenticated random)
//   InputMask    [r], with r in the clear for its owner (a party, or kClient)
//   MatrixMask   [A] (rows x cols), a fixed mask with a dealer-assigned id
//   MatrixTriple [B], [C] bound to a MatrixMask A: side kRight (A is the right operand,
//                B is m x rows, C = B*A) or kLeft (A is the left operand, B is cols x n,
//                C = A*B)
//   AttentionTriple [B], [C] bound to the fixed masks A_1..A_n of a layer's KV blocks (each
//                block_rows x kv_dim, lens[i] rows of block i used; L = sum of lens; kv(h)
//                = h / (n_heads / n_kv) is head h's kv head; rows of all blocks in order):
//                kRight ("scores", q K^T): B is n_heads x hs (ONE mask of the query against
//                every block), C[h, t] = sum_i B[h, i] A(t)[kv(h) hs + i], n_heads x L;
//                kLeft ("mix", p V): B is n_heads x L, C[h, i] = sum_t B[h, t] A(t)[kv(h)
//                hs + i], n_heads x hs.
//   FusedTriples the masks of ONE Beaver product whose operands may carry a pending
//                truncation (mpc/fused_product.h, docs/mpc-core.md "Fused products"): per
//                operand, [a] (uniform) for its plain share part (kS) and a trunc pair
//                [r], [r_top], [r_shift] for its pending truncation (kT); then the product
//                of every pair of the two operands' atoms (kS: a; kT: r_shift, r_top).
//                A pair (FusedShape::left2) has a second left operand whose atoms meet
//                the same right atoms: two products, the right operand opened once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/result.h"
#include "mpc/roles.h"
#include "mpc/share.h"

namespace mpcache::mpc {

// The owner id of values that belong to the external client.
inline constexpr PartyId kClient = -1;

enum class MaskSide : std::uint8_t { kLeft = 0, kRight = 1 };

struct MoveOnly {
  MoveOnly() = default;
  MoveOnly(const MoveOnly&) = delete;
  MoveOnly& operator=(const MoveOnly&) = delete;
  MoveOnly(MoveOnly&&) noexcept = default;
  MoveOnly& operator=(MoveOnly&&) noexcept = default;
};

template <typename P>
struct Triples : MoveOnly {
  Shares<P> a, b, c;
};

template <typename P>
struct SquarePairs : MoveOnly {
  Shares<P> a, aa;
};

template <typename P>
struct TruncPairs : MoveOnly {
  int frac_bits = 0;
  Shares<P> r, r_top, r_shift;
};

template <typename P>
struct InputMasks : MoveOnly {
  PartyId owner = 0;
  Shares<P> r;
  std::vector<std::uint64_t> clear;  // r in the clear; filled only at the owner
};

template <typename P>
struct MatrixMask : MoveOnly {
  std::uint64_t id = 0;
  std::size_t rows = 0, cols = 0;
  Shares<P> a;  // row-major rows x cols
};

template <typename P>
struct MatrixTriple : MoveOnly {
  std::uint64_t mask_id = 0;
  MaskSide side = MaskSide::kRight;
  std::size_t other = 0;  // m (rows of B) for kRight, n (cols of B) for kLeft
  Shares<P> b, c;
};

// The public shape of an attention triple (see above).
struct AttentionShape {
  MaskSide side = MaskSide::kRight;  // kRight: scores (q K^T); kLeft: mix (p V)
  std::size_t n_heads = 0, head_size = 0, kv_dim = 0;
  std::vector<std::uint64_t> masks{};  // the blocks' fixed-mask ids, in cache order
  std::vector<std::uint64_t> lens{};   // rows used of each block (1..block rows)

  std::size_t length() const {
    std::size_t n = 0;
    for (std::uint64_t l : lens) n += static_cast<std::size_t>(l);
    return n;
  }
  bool operator==(const AttentionShape&) const = default;
};

template <typename P>
struct AttentionTriple : MoveOnly {
  AttentionShape shape;
  Shares<P> b, c;
};

// The public shape of a fused product's masks (see FusedTriples above).
struct FusedShape {
  static constexpr std::uint8_t kS = 1;  // the operand has a plain share part
  static constexpr std::uint8_t kT = 2;  // the operand has a pending truncation
  std::uint8_t left = 0;                 // kS | kT, at least one
  std::uint8_t right = 0;                // the same; 0: a square (the right operand IS the left)
  std::uint8_t left_bits = 0;            // kT: the truncation's bits (1..61); else 0
  std::uint8_t right_bits = 0;
  // A second left operand times the SAME right operand (0: none; not with a square): the
  // right's masks serve both products, so it is opened once for two (a "pair").
  std::uint8_t left2 = 0;
  std::uint8_t left2_bits = 0;

  constexpr bool square() const { return right == 0; }
  constexpr bool pair() const { return left2 != 0; }
  // Packed into 30 bits (the dealer request carries it as its frac_bits).
  std::int32_t Code() const {
    return static_cast<std::int32_t>(left | (right << 2) | (left2 << 4) | (left_bits << 8) |
                                     (right_bits << 16) | ((left2_bits & 0x3F) << 24));
  }
  static FusedShape FromCode(std::int32_t code) {
    const auto u = static_cast<std::uint32_t>(code);
    return FusedShape{
        static_cast<std::uint8_t>(u & 3),           static_cast<std::uint8_t>((u >> 2) & 3),
        static_cast<std::uint8_t>((u >> 8) & 0xFF), static_cast<std::uint8_t>((u >> 16) & 0xFF),
        static_cast<std::uint8_t>((u >> 4) & 3),    static_cast<std::uint8_t>((u >> 24) & 0x3F)};
  }
  // A shape that Code() round-trips, with bits exactly where a side has kT.
  bool Valid() const {
    const auto side_ok = [](std::uint8_t comps, std::uint8_t bits) {
      return (comps & kT) != 0 ? bits >= 1 && bits <= 61 : bits == 0;
    };
    return left >= 1 && left <= 3 && right <= 3 && left2 <= 3 && (left2 == 0 || right != 0) &&
           side_ok(left, left_bits) && side_ok(right, right_bits) && side_ok(left2, left2_bits) &&
           FromCode(Code()) == *this;
  }
  bool operator==(const FusedShape&) const = default;
};

// Atoms of an operand with components `comps`: the dealer randoms its secret part is a
// public combination of, in this order: a (kS), r_shift, r_top (kT).
constexpr int FusedAtoms(std::uint8_t comps) {
  return ((comps & FusedShape::kS) != 0 ? 1 : 0) + ((comps & FusedShape::kT) != 0 ? 2 : 0);
}
// Number of products: a square has one per pair i <= j of its atoms except r_top r_top (=
// r_top, a bit); a product one per (left atom i, right atom j), i-major, then (a pair) one
// per (left2 atom i, right atom j).
constexpr int FusedProducts(const FusedShape& s) {
  const int l = FusedAtoms(s.left);
  if (s.square()) return l * (l + 1) / 2 - ((s.left & FusedShape::kT) != 0 ? 1 : 0);
  return (l + FusedAtoms(s.left2)) * FusedAtoms(s.right);
}

template <typename P>
struct FusedSide {
  Shares<P> a;                  // kS
  Shares<P> r, r_top, r_shift;  // kT: r uniform, r_top = bit 63, r_shift = (r mod 2^63) >> bits
};

template <typename P>
struct FusedTriples : MoveOnly {
  FusedShape shape;
  FusedSide<P> left, right;         // right: empty for a square
  FusedSide<P> left2;               // a pair's second left operand (else empty)
  std::vector<Shares<P>> products;  // FusedProducts(shape) vectors, in the order above
};

template <typename P>
class Preprocessing {
 public:
  virtual ~Preprocessing() = default;

  virtual PartyId party() const = 0;
  // This party's share of the global MAC key (0 in semi-honest mode).
  virtual u128 mac_key_share() const = 0;

  virtual Result<Triples<P>> GetTriples(std::size_t n) = 0;
  virtual Result<SquarePairs<P>> GetSquares(std::size_t n) = 0;
  virtual Result<TruncPairs<P>> GetTruncPairs(std::size_t n, int frac_bits) = 0;
  virtual Result<Shares<P>> GetBits(std::size_t n) = 0;
  virtual Result<Shares<P>> GetRandoms(std::size_t n) = 0;
  virtual Result<InputMasks<P>> GetInputMasks(std::size_t n, PartyId owner) = 0;
  virtual Result<MatrixMask<P>> GetMatrixMask(std::size_t rows, std::size_t cols) = 0;
  virtual Result<MatrixTriple<P>> GetMatrixTriple(std::uint64_t mask_id, MaskSide side,
                                                  std::size_t other) = 0;
  virtual Result<AttentionTriple<P>> GetAttentionTriple(const AttentionShape& shape) = 0;
  // n fused-product masks of one shape (shape.Valid()).
  virtual Result<FusedTriples<P>> GetFusedTriples(std::size_t n, const FusedShape& shape) = 0;
  // A step's plan: the attention triples it is about to take, in order, so that a remote
  // source can ask for all of them at once (a hint: Get* still works without it).
  virtual Status Announce(const std::vector<AttentionShape>& /*plan*/) { return Status::Ok(); }
  // The session's role table (mpc/roles.h), from Context::Create: a source that asks a
  // dealer names the table's corrector in every request it makes from here on (the
  // default: a source without a dealer, or one that keeps the static corrector).
  virtual void UseRoles(const std::shared_ptr<RoleTable>& /*roles*/) {}
};

}  // namespace mpcache::mpc
