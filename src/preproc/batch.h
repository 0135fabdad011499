// The dealer's unit of output: one Batch per party per request, serialisable so that a
// network dealer can stream it (the in-process dealer hands it over directly).
//
// Seed compression: party i shares a 128-bit seed with the dealer. For a batch (type, seq)
// every component j (a vector of values or MAC shares, see Components()) of party i's part
// is the AES-CTR stream of DeriveSeed(DeriveSeed(seed_i, type<<56 | seq), j). Free
// components (e.g. the triple's a and b) need nothing else; for determined components
// (c = ab, every MAC, ...) ONE party, the request's corrector, receives a correction added
// to its stream so the shares sum to the right value. So the other parties receive a
// header only, the corrector one element per determined value. The corrector is named in
// the request (every party sends the same request: the dealer's same-request check covers
// it); a batch's serialised header does not repeat it (its receiver knows what it asked
// for, and checks the payload's size against it). An input mask's clear value comes from its
// owner's seed (component kClearComponent), so the owner learns it without extra traffic either.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/prg.h"
#include "common/result.h"
#include "mpc/preprocessing.h"

namespace mpcache::preproc {

using mpc::MaskSide;
using mpc::PartyId;

enum class Security : std::uint8_t { kSemiHonest = 0, kMalicious = 1 };

enum class ItemType : std::uint8_t {
  kTriple = 1,
  kSquare = 2,
  kTrunc = 3,
  kBit = 4,
  kRandom = 5,
  kInputMask = 6,
  kMatrixMask = 7,
  kMatrixTriple = 8,
  kAttention = 9,
  kFused = 10,
};
inline constexpr int kNumItemTypes = 11;

const char* ItemTypeName(ItemType t);

// The static table's corrector of three parties: the last one (mpc::RoleTable::StaticRoles).
inline constexpr std::int32_t kStaticCorrector = 2;

// What to make. count = number of elements (elementwise types); for kMatrixMask rows x
// cols; for kMatrixTriple mask_id, side and other (m for kRight, n for kLeft); for
// kAttention (mpc::AttentionShape) side, other = n_heads, rows = head size, cols = kv_dim,
// masks and lens (at most kMaxAttentionBlocks blocks); for kFused count and frac_bits =
// mpc::FusedShape::Code().
struct BatchRequest {
  ItemType type = ItemType::kTriple;
  std::uint64_t count = 0;
  std::int32_t frac_bits = 0;          // kTrunc; kFused: the shape's code
  std::int32_t owner = 0;              // kInputMask (mpc::kClient for the client)
  std::uint64_t mask_id = 0;           // kMatrixTriple
  MaskSide side = MaskSide::kRight;    // kMatrixTriple
  std::uint64_t rows = 0, cols = 0;    // kMatrixMask; kMatrixTriple: the mask's shape
  std::uint64_t other = 0;             // kMatrixTriple
  std::vector<std::uint64_t> masks{};  // kAttention: block mask ids
  std::vector<std::uint64_t> lens{};   // kAttention: rows used of each block
  // The party that receives the corrections (mpc/roles.h): kStaticCorrector unless the
  // requesting party's role table says otherwise. Not in Batch::Serialize.
  std::int32_t corrector = kStaticCorrector;

  bool operator==(const BatchRequest&) const = default;
};

inline constexpr std::uint64_t kMaxAttentionBlocks = std::uint64_t{1} << 16;

BatchRequest AttentionRequest(const mpc::AttentionShape& s);
mpc::AttentionShape AttentionShapeOf(const BatchRequest& r);

struct Batch {
  Security security = Security::kMalicious;
  std::int32_t party = 0;  // receiver (mpc::kClient for the client's part)
  std::uint64_t seq = 0;   // per-type sequence number, from 0, no gaps
  BatchRequest request;
  // Corrections (request.corrector only), component-major. Serialize/Parse carry the
  // request without its corrector: Parse gives kStaticCorrector, and the receiver sets the
  // one it asked for before accepting the batch.
  std::vector<std::uint8_t> payload;

  std::size_t WireSize() const;
  std::vector<std::uint8_t> Serialize() const;
  static Result<Batch> Parse(std::span<const std::uint8_t> bytes);
};

// Upper bounds on one batch, checked (with overflow-checked arithmetic) before anything is
// allocated, by the dealer on every request and by a party on every batch it accepts. A
// refusal names the request field and the setting the bound comes from (`*_setting`): the
// network dealer sets these from its config (pool.capacity_items, pool.max_matrix_elements),
// a party from its model's shapes; the defaults are the built-in bound kMaxBatchElements.
inline constexpr std::uint64_t kMaxBatchElements = std::uint64_t{1} << 31;
struct BatchLimits {
  std::uint64_t max_items = kMaxBatchElements;            // count of an elementwise batch
  std::uint64_t max_matrix_elements = kMaxBatchElements;  // a mask's rows x cols; a triple's
                                                          // A, B and C each
  std::string items_setting = "preproc::kMaxBatchElements, the built-in bound";
  std::string matrix_setting = "preproc::kMaxBatchElements, the built-in bound";
  // The corrector's corrections (CorrectionBytes); a network dealer bounds them by the
  // largest message a party reads.
  std::uint64_t max_correction_bytes = ~std::uint64_t{0};
  std::string bytes_setting = "no bound";
};

// One vector of a batch: `mac` (16-byte MAC shares) or a value component (8-byte words in
// semi-honest mode, 16-byte in malicious mode); `determined` ones get corrections.
struct Component {
  bool mac = false;
  bool determined = false;
  std::uint64_t n = 0;
};
inline constexpr std::uint64_t kClearComponent = 1000;
inline constexpr std::uint64_t kMacKeyLabel = 0xA1FA0000ull;

// The components of a batch, in stream/payload order (values first, then their MACs).
// Refuses (kInvalidArgument, naming the field) a request with a size that overflows or
// exceeds `limits`, a matrix with a zero dimension, or trunc pairs with bad frac_bits.
Result<std::vector<Component>> Components(Security security, const BatchRequest& r,
                                          const BatchLimits& limits = {});
std::size_t ElementBytes(Security security, const Component& c);
// Expected payload size at the corrector (the same checks as Components).
Result<std::size_t> CorrectionBytes(Security security, const BatchRequest& r,
                                    const BatchLimits& limits = {});

// What each value component of a kFused batch is, in component order: per side (left,
// then right unless a square, then a pair's second left) a (kS), then r, r_top, r_shift
// (kT); then the products, each of two atoms (FusedAtoms order: a, r_shift, r_top) of the
// left side (i) and of the right side (j; of the left side again for a square); a pair's
// second left side's products with the right side last (side 2).
struct FusedRole {
  enum Kind : std::uint8_t { kA, kR, kRTop, kRShift, kProduct };
  Kind kind = kA;
  int side = 0;      // 0 left, 1 right, 2 a pair's second left (products: 0 or 2, the left)
  int i = 0, j = 0;  // kProduct: atom indices
};
std::vector<FusedRole> FusedRoles(const mpc::FusedShape& shape);

// The seed of component j of batch (type, seq) for a party with seed `party_seed`.
Seed ComponentSeed(const Seed& party_seed, ItemType type, std::uint64_t seq, std::uint64_t j);

}  // namespace mpcache::preproc
