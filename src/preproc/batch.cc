#include "preproc/batch.h"

#include <cstring>
#include <string>

#include "common/checked.h"

namespace mpcache::preproc {
namespace {

constexpr std::uint8_t kMagic[4] = {'M', 'P', 'C', 'B'};
constexpr std::uint8_t kVersion = 2;
// Fixed header, then (kAttention) the block list: masks, then lens, 8 bytes each.
constexpr std::size_t kHeaderBytes = 4 + 4 + 3 * 4 + 7 * 8 + 4;

template <typename T>
void Put(std::vector<std::uint8_t>& out, std::size_t& off, T v) {
  std::memcpy(out.data() + off, &v, sizeof(T));
  off += sizeof(T);
}

template <typename T>
T Take(std::span<const std::uint8_t> in, std::size_t& off) {
  T v;
  std::memcpy(&v, in.data() + off, sizeof(T));
  off += sizeof(T);
  return v;
}

}  // namespace

const char* ItemTypeName(ItemType t) {
  switch (t) {
    case ItemType::kTriple:
      return "triple";
    case ItemType::kSquare:
      return "square";
    case ItemType::kTrunc:
      return "trunc";
    case ItemType::kBit:
      return "bit";
    case ItemType::kRandom:
      return "random";
    case ItemType::kInputMask:
      return "input-mask";
    case ItemType::kMatrixMask:
      return "matrix-mask";
    case ItemType::kMatrixTriple:
      return "matrix-triple";
    case ItemType::kAttention:
      return "attention-triple";
    case ItemType::kFused:
      return "fused-triple";
  }
  return "unknown";
}

std::vector<FusedRole> FusedRoles(const mpc::FusedShape& shape) {
  std::vector<FusedRole> out;
  const auto side = [&](std::uint8_t comps, int s) {
    if ((comps & mpc::FusedShape::kS) != 0) out.push_back({FusedRole::kA, s, 0, 0});
    if ((comps & mpc::FusedShape::kT) != 0) {
      out.push_back({FusedRole::kR, s, 0, 0});
      out.push_back({FusedRole::kRTop, s, 0, 0});
      out.push_back({FusedRole::kRShift, s, 0, 0});
    }
  };
  side(shape.left, 0);
  if (!shape.square()) side(shape.right, 1);
  if (shape.pair()) side(shape.left2, 2);
  const int nl = mpc::FusedAtoms(shape.left);
  // The left atom list ends with r_top when the side has kT.
  const int top = (shape.left & mpc::FusedShape::kT) != 0 ? nl - 1 : -1;
  if (shape.square()) {
    for (int i = 0; i < nl; ++i) {
      for (int j = i; j < nl; ++j) {
        if (i == top && j == top) continue;  // r_top^2 = r_top
        out.push_back({FusedRole::kProduct, 0, i, j});
      }
    }
  } else {
    const int nr = mpc::FusedAtoms(shape.right);
    for (int i = 0; i < nl; ++i) {
      for (int j = 0; j < nr; ++j) out.push_back({FusedRole::kProduct, 0, i, j});
    }
    for (int i = 0; i < mpc::FusedAtoms(shape.left2); ++i) {
      for (int j = 0; j < nr; ++j) out.push_back({FusedRole::kProduct, 2, i, j});
    }
  }
  return out;
}

namespace {

std::string Field(const BatchRequest& r, const char* field) {
  return std::string(ItemTypeName(r.type)) + " request: " + field;
}

Status CheckLimit(const BatchRequest& r, const char* field, std::uint64_t n, std::uint64_t limit,
                  const std::string& setting) {
  if (n <= limit) return Status::Ok();
  return InvalidArgument(Field(r, field) + " = " + std::to_string(n) + " exceeds the limit of " +
                         std::to_string(limit) + " (" + setting + ")");
}

Status CheckDim(const BatchRequest& r, const char* field, std::uint64_t n) {
  if (n > 0) return Status::Ok();
  return InvalidArgument(Field(r, field) + " is 0; a matrix needs at least one row and column");
}

// A matrix of a x b elements: the product checked for overflow and against the limit.
Result<std::uint64_t> MatrixElements(const BatchRequest& r, const char* field, std::uint64_t a,
                                     std::uint64_t b, const BatchLimits& limits) {
  Result<std::uint64_t> product = MulSize(a, b, Field(r, field));
  if (!product.ok()) {
    return InvalidArgument(product.error().message() + "; at most " +
                           std::to_string(limits.max_matrix_elements) + " elements are allowed (" +
                           limits.matrix_setting + ")");
  }
  const std::uint64_t n = *product;
  MPCACHE_RETURN_IF_ERROR(
      CheckLimit(r, field, n, limits.max_matrix_elements, limits.matrix_setting));
  return n;
}

}  // namespace

BatchRequest AttentionRequest(const mpc::AttentionShape& s) {
  return BatchRequest{.type = ItemType::kAttention,
                      .side = s.side,
                      .rows = s.head_size,
                      .cols = s.kv_dim,
                      .other = s.n_heads,
                      .masks = s.masks,
                      .lens = s.lens};
}

mpc::AttentionShape AttentionShapeOf(const BatchRequest& r) {
  return mpc::AttentionShape{.side = r.side,
                             .n_heads = static_cast<std::size_t>(r.other),
                             .head_size = static_cast<std::size_t>(r.rows),
                             .kv_dim = static_cast<std::size_t>(r.cols),
                             .masks = r.masks,
                             .lens = r.lens};
}

Result<std::vector<Component>> Components(Security security, const BatchRequest& r,
                                          const BatchLimits& limits) {
  std::vector<Component> v;
  auto val = [&](bool det, std::uint64_t n) { v.push_back({false, det, n}); };
  const bool matrix = r.type == ItemType::kMatrixMask || r.type == ItemType::kMatrixTriple ||
                      r.type == ItemType::kAttention;
  if (r.type != ItemType::kAttention && (!r.masks.empty() || !r.lens.empty())) {
    return InvalidArgument(Field(r, "masks/lens") + " are only for attention triples");
  }
  if (!matrix) {
    MPCACHE_RETURN_IF_ERROR(
        CheckLimit(r, "count", r.count, limits.max_items, limits.items_setting));
  }
  switch (r.type) {
    case ItemType::kTriple:
      val(false, r.count), val(false, r.count), val(true, r.count);
      break;
    case ItemType::kSquare:
      val(false, r.count), val(true, r.count);
      break;
    case ItemType::kTrunc:
      if (r.frac_bits < 1 || r.frac_bits > 61) {
        return InvalidArgument(Field(r, "frac_bits") + " = " + std::to_string(r.frac_bits) +
                               "; trunc pairs need 1..61 fractional bits");
      }
      val(false, r.count), val(true, r.count), val(true, r.count);
      break;
    case ItemType::kFused: {
      const mpc::FusedShape shape = mpc::FusedShape::FromCode(r.frac_bits);
      if (!shape.Valid()) {
        return InvalidArgument(Field(r, "frac_bits") + " = " + std::to_string(r.frac_bits) +
                               " is not a fused-product shape (mpc::FusedShape::Code)");
      }
      for (const FusedRole& role : FusedRoles(shape)) {
        val(role.kind != FusedRole::kA && role.kind != FusedRole::kR, r.count);
      }
      break;
    }
    case ItemType::kBit:
      val(true, r.count);
      break;
    case ItemType::kRandom:
      val(false, r.count);
      break;
    case ItemType::kInputMask:
      val(true, r.count);
      break;
    case ItemType::kMatrixMask: {
      MPCACHE_RETURN_IF_ERROR(CheckDim(r, "rows", r.rows));
      MPCACHE_RETURN_IF_ERROR(CheckDim(r, "cols", r.cols));
      MPCACHE_ASSIGN_OR_RETURN(std::uint64_t n,
                               MatrixElements(r, "rows x cols", r.rows, r.cols, limits));
      val(false, n);
      break;
    }
    case ItemType::kMatrixTriple: {
      // rows x cols: the mask A's shape; B and C follow from the side and `other`.
      MPCACHE_RETURN_IF_ERROR(CheckDim(r, "rows (of the mask)", r.rows));
      MPCACHE_RETURN_IF_ERROR(CheckDim(r, "cols (of the mask)", r.cols));
      MPCACHE_RETURN_IF_ERROR(CheckDim(r, "other", r.other));
      MPCACHE_ASSIGN_OR_RETURN(
          [[maybe_unused]] std::uint64_t na,
          MatrixElements(r, "rows x cols (the mask A)", r.rows, r.cols, limits));
      const bool right = r.side == MaskSide::kRight;
      MPCACHE_ASSIGN_OR_RETURN(std::uint64_t nb,
                               right ? MatrixElements(r, "other x rows (B of a right-side triple)",
                                                      r.other, r.rows, limits)
                                     : MatrixElements(r, "cols x other (B of a left-side triple)",
                                                      r.cols, r.other, limits));
      MPCACHE_ASSIGN_OR_RETURN(std::uint64_t nc,
                               right ? MatrixElements(r, "other x cols (C of a right-side triple)",
                                                      r.other, r.cols, limits)
                                     : MatrixElements(r, "rows x other (C of a left-side triple)",
                                                      r.rows, r.other, limits));
      val(false, nb), val(true, nc);
      break;
    }
    case ItemType::kAttention: {
      // rows = head size, cols = kv_dim, other = n_heads; B and C: see mpc::AttentionShape.
      MPCACHE_RETURN_IF_ERROR(CheckDim(r, "rows (head size)", r.rows));
      MPCACHE_RETURN_IF_ERROR(CheckDim(r, "cols (kv_dim)", r.cols));
      MPCACHE_RETURN_IF_ERROR(CheckDim(r, "other (n_heads)", r.other));
      if (r.cols % r.rows != 0 || r.other % (r.cols / r.rows) != 0) {
        return InvalidArgument(Field(r, "shape") + ": kv_dim " + std::to_string(r.cols) +
                               " must be a multiple of the head size " + std::to_string(r.rows) +
                               " and n_heads " + std::to_string(r.other) +
                               " a multiple of the kv heads");
      }
      if (r.masks.empty() || r.masks.size() != r.lens.size()) {
        return InvalidArgument(Field(r, "masks") + ": " + std::to_string(r.masks.size()) +
                               " block masks and " + std::to_string(r.lens.size()) +
                               " lengths; an attention triple needs one length per block and at "
                               "least one block");
      }
      MPCACHE_RETURN_IF_ERROR(
          CheckLimit(r, "blocks", r.masks.size(), kMaxAttentionBlocks, "kMaxAttentionBlocks"));
      std::uint64_t length = 0;
      for (std::uint64_t l : r.lens) {
        if (l == 0) return InvalidArgument(Field(r, "lens") + ": a block with no rows");
        MPCACHE_ASSIGN_OR_RETURN(length, AddSize(length, l, Field(r, "sum of lens")));
      }
      MPCACHE_ASSIGN_OR_RETURN(std::uint64_t nq,
                               MatrixElements(r, "n_heads x head size", r.other, r.rows, limits));
      MPCACHE_ASSIGN_OR_RETURN(std::uint64_t nl,
                               MatrixElements(r, "n_heads x sum of lens", r.other, length, limits));
      const bool scores = r.side == MaskSide::kRight;
      val(false, scores ? nq : nl), val(true, scores ? nl : nq);
      break;
    }
    default:
      return CorruptData("unknown preprocessing item type " +
                         std::to_string(static_cast<int>(r.type)));
  }
  std::uint64_t total = 0;
  for (const auto& c : v) {
    MPCACHE_ASSIGN_OR_RETURN(total, AddSize(total, c.n, Field(r, "elements of the batch")));
  }
  if (total > kMaxBatchElements) {
    return InvalidArgument(Field(r, "elements of the batch") + " = " + std::to_string(total) +
                           " exceeds the largest batch this build makes (" +
                           std::to_string(kMaxBatchElements) +
                           ", preproc::kMaxBatchElements); ask for fewer items per request");
  }
  if (security == Security::kMalicious) {
    const std::size_t nv = v.size();
    for (std::size_t j = 0; j < nv; ++j) v.push_back({true, true, v[j].n});
  }
  return v;
}

std::size_t ElementBytes(Security security, const Component& c) {
  return (c.mac || security == Security::kMalicious) ? 16 : 8;
}

Result<std::size_t> CorrectionBytes(Security security, const BatchRequest& r,
                                    const BatchLimits& limits) {
  MPCACHE_ASSIGN_OR_RETURN(std::vector<Component> comps, Components(security, r, limits));
  std::uint64_t total = 0;
  for (const auto& c : comps) {
    if (!c.determined) continue;
    MPCACHE_ASSIGN_OR_RETURN(std::uint64_t bytes,
                             MulSize(c.n, ElementBytes(security, c), Field(r, "correction bytes")));
    MPCACHE_ASSIGN_OR_RETURN(total, AddSize(total, bytes, Field(r, "correction bytes")));
  }
  MPCACHE_RETURN_IF_ERROR(
      CheckLimit(r, "correction bytes", total, limits.max_correction_bytes, limits.bytes_setting));
  return static_cast<std::size_t>(total);
}

Seed ComponentSeed(const Seed& party_seed, ItemType type, std::uint64_t seq, std::uint64_t j) {
  const std::uint64_t label = (static_cast<std::uint64_t>(type) << 56) | seq;
  return DeriveSeed(DeriveSeed(party_seed, label), j);
}

std::size_t Batch::WireSize() const {
  return kHeaderBytes + 8 * (request.masks.size() + request.lens.size()) + payload.size();
}

std::vector<std::uint8_t> Batch::Serialize() const {
  std::vector<std::uint8_t> out(WireSize());
  std::size_t off = 0;
  std::memcpy(out.data(), kMagic, 4);
  off = 4;
  Put<std::uint8_t>(out, off, kVersion);
  Put<std::uint8_t>(out, off, static_cast<std::uint8_t>(security));
  Put<std::uint8_t>(out, off, static_cast<std::uint8_t>(request.type));
  Put<std::uint8_t>(out, off, static_cast<std::uint8_t>(request.side));
  Put<std::int32_t>(out, off, party);
  Put<std::int32_t>(out, off, request.frac_bits);
  Put<std::int32_t>(out, off, request.owner);
  Put<std::uint64_t>(out, off, seq);
  Put<std::uint64_t>(out, off, request.count);
  Put<std::uint64_t>(out, off, request.mask_id);
  Put<std::uint64_t>(out, off, request.rows);
  Put<std::uint64_t>(out, off, request.cols);
  Put<std::uint64_t>(out, off, request.other);
  Put<std::uint64_t>(out, off, static_cast<std::uint64_t>(payload.size()));
  Put<std::uint32_t>(out, off, static_cast<std::uint32_t>(request.masks.size()));
  for (std::uint64_t m : request.masks) Put<std::uint64_t>(out, off, m);
  for (std::uint64_t l : request.lens) Put<std::uint64_t>(out, off, l);
  if (!payload.empty()) std::memcpy(out.data() + off, payload.data(), payload.size());
  return out;
}

Result<Batch> Batch::Parse(std::span<const std::uint8_t> bytes) {
  if (bytes.size() < kHeaderBytes || std::memcmp(bytes.data(), kMagic, 4) != 0) {
    return CorruptData("not a preprocessing batch (bad magic or short header)");
  }
  std::size_t off = 4;
  if (Take<std::uint8_t>(bytes, off) != kVersion) {
    return Unsupported("preprocessing batch version not supported");
  }
  Batch b;
  const auto sec = Take<std::uint8_t>(bytes, off);
  const auto type = Take<std::uint8_t>(bytes, off);
  const auto side = Take<std::uint8_t>(bytes, off);
  if (sec > 1 || type < 1 || type >= kNumItemTypes || side > 1) {
    return CorruptData("preprocessing batch header has an invalid field");
  }
  b.security = static_cast<Security>(sec);
  b.request.type = static_cast<ItemType>(type);
  b.request.side = static_cast<MaskSide>(side);
  b.party = Take<std::int32_t>(bytes, off);
  b.request.frac_bits = Take<std::int32_t>(bytes, off);
  b.request.owner = Take<std::int32_t>(bytes, off);
  b.seq = Take<std::uint64_t>(bytes, off);
  b.request.count = Take<std::uint64_t>(bytes, off);
  b.request.mask_id = Take<std::uint64_t>(bytes, off);
  b.request.rows = Take<std::uint64_t>(bytes, off);
  b.request.cols = Take<std::uint64_t>(bytes, off);
  b.request.other = Take<std::uint64_t>(bytes, off);
  const auto len = Take<std::uint64_t>(bytes, off);
  const auto blocks = Take<std::uint32_t>(bytes, off);
  if (blocks > kMaxAttentionBlocks || (blocks > 0) != (b.request.type == ItemType::kAttention) ||
      bytes.size() - kHeaderBytes < std::size_t{16} * blocks) {
    return CorruptData("preprocessing batch header lists " + std::to_string(blocks) +
                       " attention blocks, which its type and size do not allow");
  }
  b.request.masks.resize(blocks);
  b.request.lens.resize(blocks);
  for (auto& m : b.request.masks) m = Take<std::uint64_t>(bytes, off);
  for (auto& l : b.request.lens) l = Take<std::uint64_t>(bytes, off);
  if (len != bytes.size() - off) {
    return CorruptData("preprocessing batch payload length " + std::to_string(len) +
                       " does not match the " + std::to_string(bytes.size() - off) +
                       " bytes received");
  }
  b.payload.assign(bytes.begin() + static_cast<std::ptrdiff_t>(off), bytes.end());
  return b;
}

}  // namespace mpcache::preproc
