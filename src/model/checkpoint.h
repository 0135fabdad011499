// Checkpoint files -> ModelWeights. Formats (detected by their first bytes):
//  - llama2.c legacy: 7 int32 header (dim, hidden_dim, n_layers, n_heads, n_kv_heads,
//    vocab_size, seq_len; vocab_size < 0 means a separate classifier), then float32
//    tensors grouped by kind across layers, the RoPE freq_cis tables (skipped), [wcls].
//  - llama2.c versioned ("ak42" magic, 256-byte header): version 1 = float32,
//    version 2 = Q8_0 (int8 values + one float32 scale per group), dequantised on load.
//  - GGUF v3 (see gguf.h): F32 / F16 / Q8_0 tensors and an embedded vocabulary.
// All errors name the file and what is wrong: kNotFound / kIo for the file itself,
// kCorruptData for bytes disagreeing with the header, kUnsupported for valid but
// unsupported variants.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "model/vocabulary.h"
#include "model/weights.h"

namespace mpcache::model {

enum class CheckpointFormat { kLlama2cLegacy, kLlama2cVersioned, kGguf };

// "llama2.c legacy", "llama2.c ak42", "GGUF".
std::string_view FormatName(CheckpointFormat format);

inline constexpr std::uint32_t kLlama2cMagic = 0x616b3432;  // "ak42" (bytes "24ka" on disk)
inline constexpr std::uint32_t kGgufMagic = 0x46554747;     // "GGUF"

// Looks at the first bytes only.
Result<CheckpointFormat> DetectCheckpointFormat(const std::string& path);

// A loaded checkpoint with what we know about its file.
struct Checkpoint {
  CheckpointFormat format = CheckpointFormat::kLlama2cLegacy;
  int version = 0;          // ak42 / GGUF version; 0 for legacy
  std::string weight_type;  // "F32", "Q8_0", "F16", "mixed" (on disk; in memory float)
  std::uint64_t file_size = 0;
  ModelWeights weights;
  std::optional<Vocabulary> vocabulary;  // GGUF with tokenizer.ggml.* metadata
  std::string vocabulary_problem;        // why a GGUF has no usable vocabulary, if it has none
};

// Any supported format.
Result<Checkpoint> OpenCheckpoint(const std::string& path);
Result<ModelWeights> LoadCheckpoint(const std::string& path);

// llama2.c formats (legacy or ak42 versioned, detected by the magic).
Result<ModelWeights> LoadLlama2c(const std::string& path);

// Writes the llama2.c legacy format (readable by llama2.c's run.c): header with negative
// vocab_size when the classifier is separate, freq_cis tables computed from rope_theta.
Status WriteLlama2c(const ModelWeights& weights, const std::string& path);

// Writes the ak42 versioned format: version 1 (float32) or 2 (Q8_0, group size = largest
// power of two <= 64 dividing dim, as llama2.c's export.py).
Status WriteLlama2cVersioned(const ModelWeights& weights, const std::string& path, int version);

}  // namespace mpcache::model
