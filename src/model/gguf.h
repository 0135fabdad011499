// GGUF v3 (llama.cpp's model format) -> Checkpoint: header, metadata key/values (all
// value types, arrays included), tensor infos, aligned tensor data (general.alignment,
// default 32); F32, F16, BF16 and Q8_0 tensors dequantised to float; llama.*
// hyper-parameters; the embedded tokenizer.ggml.* vocabulary converted to llama2.c's
// convention (see vocabulary.h). GGUF (like llama2.c) keeps Meta's Q/K row order, so wq/wk
// need no RoPE un-permutation (checked: stories260K.gguf == stories260K.bin bit for bit).
// Versions 2 and 3 are read (same layout); version 1 is rejected as unsupported.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"
#include "model/checkpoint.h"
#include "model/file_io.h"

namespace mpcache::model {

enum class GgufValueType : std::uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

// ggml tensor types we read (others are reported by number and name as unsupported).
enum class GgmlType : std::uint32_t { kF32 = 0, kF16 = 1, kQ8_0 = 8, kBF16 = 30 };
std::string GgmlTypeName(std::uint32_t type);

struct GgufValue {
  GgufValueType type = GgufValueType::kUint8;
  // Scalars: integers in i and u (u = 0 for negative values; i wraps for u > INT64_MAX),
  // floats in f, bool in u and i.
  std::int64_t i = 0;
  std::uint64_t u = 0;
  double f = 0.0;
  std::string s;
  GgufValueType array_type = GgufValueType::kUint8;
  std::vector<GgufValue> array;

  bool IsInteger() const;
  bool IsFloat() const {
    return type == GgufValueType::kFloat32 || type == GgufValueType::kFloat64;
  }
};

struct GgufTensorInfo {
  std::string name;
  std::vector<std::uint64_t> dims;  // ne[0] is the contiguous (innermost) dimension
  std::uint32_t type = 0;           // ggml type
  std::uint64_t offset = 0;         // relative to the data section
  std::uint64_t elements = 0;
  std::uint64_t bytes = 0;  // 0 when the type is unsupported
};

struct GgufFile {
  std::uint32_t version = 0;
  std::map<std::string, GgufValue> metadata;
  std::vector<GgufTensorInfo> tensors;
  std::uint64_t alignment = 32;
  std::uint64_t data_offset = 0;  // absolute file offset of the data section

  const GgufValue* Find(const std::string& key) const;
  const GgufTensorInfo* FindTensor(const std::string& name) const;
};

// Parses header, metadata and tensor infos; checks every tensor lies inside the file.
Result<GgufFile> ReadGgufHeader(FileReader& reader);
// Reads one tensor as float (F32 / F16 / BF16 / Q8_0).
Result<std::vector<float>> ReadGgufTensor(FileReader& reader, const GgufFile& file,
                                          const GgufTensorInfo& tensor);

// The llama.* hyper-parameters of a parsed GGUF, checked (architecture, sizes, rotary).
Result<ModelConfig> GgufModelConfig(const GgufFile& file, const std::string& path);
// The embedded tokenizer.ggml.* vocabulary in llama2.c's convention; nullopt (and *problem
// says why) when the file has none that is usable.
Result<std::optional<Vocabulary>> GgufVocabulary(const GgufFile& file, const std::string& path,
                                                 std::string* problem);
// "[4096, 32000]".
std::string GgufShape(const std::vector<std::uint64_t>& dims);

// Loads a GGUF file whose magic has been checked; `reader` is positioned at 0.
Result<Checkpoint> LoadGgufCheckpoint(FileReader& reader);
Result<Checkpoint> LoadGguf(const std::string& path);

// Writes a llama-architecture GGUF v3 (tensor type kF32, kF16 or kQ8_0 for the matrices;
// norms stay F32) with an optional embedded vocabulary (llama2.c convention in, converted
// to SentencePiece pieces). For tests, conversions and interop.
Status WriteGguf(const ModelWeights& weights, const Vocabulary* vocab, const std::string& path,
                 GgmlType matrix_type = GgmlType::kF32);

// The pieces of the writer, for writers that stream (model/synth.h):
inline constexpr std::uint64_t kGgufWriteAlign = 32;
struct GgufTensorPlan {
  std::string name;
  std::vector<std::uint64_t> dims;  // ne[0] first (the row length)
  GgmlType type = GgmlType::kF32;
  std::uint64_t bytes() const;  // unpadded
};
// A llama model's tensors in the writer's order: token_embd, output_norm, [output], then per
// layer attn_norm, attn_q, attn_k, attn_v, attn_output, ffn_norm, ffn_gate, ffn_down, ffn_up
// (matrices of `matrix_type`, norms F32).
std::vector<GgufTensorPlan> LlamaGgufTensors(const ModelConfig& config, GgmlType matrix_type);
// Everything before the first tensor's data (header, metadata, tensor infos, padding); each
// tensor's data then follows, padded to kGgufWriteAlign.
Result<std::vector<std::uint8_t>> GgufPreamble(const ModelConfig& config, const Vocabulary* vocab,
                                               const std::vector<GgufTensorPlan>& tensors);
// Appends x encoded as `type` (Q8_0: x.size() a multiple of 32, llama.cpp's reference
// quantisation: d = amax / 127 as f16, q = round(x / d)).
void AppendGgufEncoded(std::span<const float> x, GgmlType type, std::vector<std::uint8_t>& out);

// IEEE half / bfloat16 -> float.
float HalfToFloat(std::uint16_t h);
std::uint16_t FloatToHalf(float f);

}  // namespace mpcache::model
