// CompactModel: a GGUF checkpoint whose matrices stay in their own compact form — Q8_0
// blocks (32 int8 + one f16 scale) or F16 — in ONE read-only memory map of the file
// (model/mapped_file.h). Nothing is widened: the secure and the fixed-point engines compute
// their products straight from these bytes (model/compact_kernels.h), and every process that
// opens the same file shares its pages through the page cache.
//
// Exact integer form. Every f16 number times 2^24 is an integer (the smallest subnormal is
// 2^-24), so a compact matrix stands for the integers
//   Q8_0:  W[i, j] = S[i, b] * q[i, j],  S[i, b] = d[i, b] * 2^24,  b = j / 32
//   F16:   W[i, j] = h[i, j] * 2^24
// exactly (|S| < 2^40). A product with an activation x at f fractional bits is therefore
// sum_j W[i, j] x[j] at f + 24 bits, exact in the ring; ONE truncation by 24 bits brings it
// back to f bits (kCompactScaleBits). The per-block scales are folded in before that single
// truncation: no rounding of the weights to f bits ever happens.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "model/mapped_file.h"
#include "model/vocabulary.h"
#include "model/weights.h"

namespace mpcache::model {

inline constexpr int kCompactScaleBits = 24;  // every f16 value x 2^24 is an integer
inline constexpr std::size_t kQ8Block = 32;   // weights per Q8_0 block
inline constexpr std::size_t kQ8BlockBytes = 34;

enum class CompactType : std::uint8_t { kQ8_0, kF16 };
std::string_view CompactTypeName(CompactType type);

// f16 bits -> value x 2^24, exact. Infinities and NaNs are refused when a model is opened,
// so they never reach this.
inline std::int64_t ScaledHalf(std::uint16_t h) {
  const std::int64_t exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
  const std::int64_t mag = exp == 0 ? mant : (1024 + mant) << (exp - 1);
  return (h & 0x8000) != 0 ? -mag : mag;
}

// A row-major matrix in the mapped file (rows x cols; for Q8_0 each row is cols / 32 blocks).
struct CompactMatrix {
  CompactType type = CompactType::kQ8_0;
  const std::uint8_t* data = nullptr;
  std::size_t rows = 0, cols = 0;
  // max |W[i, j]| / |q| over the matrix: the largest |S| (Q8_0) or |h| x 2^24 (F16). It
  // decides whether the vectorised kernels' 64-bit lanes are exact (compact_kernels.h).
  std::int64_t max_scaled = 0;
  std::string name;  // the GGUF tensor's

  std::size_t row_bytes() const {
    return type == CompactType::kQ8_0 ? cols / kQ8Block * kQ8BlockBytes : cols * 2;
  }
  std::uint64_t bytes() const { return static_cast<std::uint64_t>(rows) * row_bytes(); }
  const std::uint8_t* row(std::size_t r) const { return data + r * row_bytes(); }
  // The exact integer W[r, c] (value x 2^24).
  std::int64_t At(std::size_t r, std::size_t c) const;
  // Rows [first, first + count) as a matrix of their own (same bytes).
  CompactMatrix Rows(std::size_t first, std::size_t count) const;
};

struct CompactLayer {
  std::vector<float> rms_att, rms_ffn;       // (dim) gains, decoded
  CompactMatrix wq, wk, wv, wo, w1, w2, w3;  // llama2.c's shapes (out x in)
};

struct CompactOpenOptions {
  // Hash the whole file (file_sha256) and check every scale/value. Off: the header only
  // (info); the products are then not known to be exact, so engines refuse such a model.
  bool check = true;
  // Called now and then with (bytes checked, total) while the file is hashed and checked.
  std::function<void(std::uint64_t, std::uint64_t)> progress;
};

class CompactModel {
 public:
  // Maps a GGUF file whose matrices are all Q8_0 or F16 (norms F32 or F16), checks every
  // tensor's shape, every scale/value (no infinities or NaNs) and hashes the file (SHA-256,
  // the model's identity). kUnsupported names a matrix of another type (F32, BF16, ...):
  // those files load through LoadCheckpoint (the wide ring encoding).
  static Result<std::shared_ptr<const CompactModel>> Open(const std::string& path,
                                                          const CompactOpenOptions& options = {});
  // Whether `path` is a GGUF with only Q8_0/F16 matrices (its header alone is read).
  static Result<bool> IsCompactCheckpoint(const std::string& path);

  ModelConfig config;
  int gguf_version = 0;
  std::string weight_type;  // "Q8_0", "F16" or "mixed"
  CompactMatrix embedding;  // (vocab, dim)
  std::vector<CompactLayer> layers;
  std::vector<float> rms_final;  // (dim)
  CompactMatrix wcls;            // (vocab, dim); empty (rows 0) when the classifier is shared
  std::optional<Vocabulary> vocabulary;
  std::string vocabulary_problem;
  std::array<std::uint8_t, 32> file_sha256{};
  bool checked = false;  // opened with CompactOpenOptions::check

  const std::string& path() const { return map_->path(); }
  std::uint64_t file_size() const { return map_->size(); }
  const CompactMatrix& classifier() const { return config.shared_classifier ? embedding : wcls; }
  // Bytes of matrix weights one forward pass streams (every layer's, plus the classifier).
  std::uint64_t LayerMatrixBytes() const;
  // The same model cut to its first `n` layers (shares the mapping).
  Result<std::shared_ptr<const CompactModel>> FirstLayers(int n) const;

 private:
  std::shared_ptr<const MappedFile> map_;
};

}  // namespace mpcache::model
