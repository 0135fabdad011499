// llama2.c's versioned export format ("ak42"): a 256-byte header
//   uint32 magic 0x616b3432, int32 version, 7 x int32 (dim, hidden_dim, n_layers, n_heads,
//   n_kv_heads, vocab_size, seq_len), uint8 shared_classifier, [v2: int32 group_size], zeros
// then version 1: float32 norms (rms_att x L, rms_ffn x L, rms_final) followed by float32
// token_embedding, wq x L, wk x L, wv x L, wo x L, w1 x L, w2 x L, w3 x L, [wcls];
// version 2: the same float32 norms, then each matrix as int8 values followed by float32
// scales, one per group_size consecutive values (Q8_0), dequantised here to float.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "model/checkpoint.h"
#include "model/checkpoint_internal.h"

namespace mpcache::model::internal {

namespace {

constexpr std::uint64_t kHeaderBytes = 256;

struct VersionedHeader {
  std::uint32_t magic;
  std::int32_t version;
  std::int32_t dims[7];
  std::uint8_t shared;
};

std::string Num(std::uint64_t v) {
  return std::to_string(v);
}

}  // namespace

Result<Checkpoint> LoadVersioned(FileReader& reader) {
  const std::string& path = reader.path();
  if (reader.size() < kHeaderBytes) {
    return CorruptData(path + ": file is truncated: " + Num(reader.size()) +
                       " bytes, the ak42 header alone needs 256");
  }
  std::uint8_t header[kHeaderBytes];
  MPCACHE_RETURN_IF_ERROR(reader.Read(header, sizeof(header), "ak42 header"));
  std::uint32_t magic = 0;
  std::int32_t version = 0, dims[7] = {}, group_size = 0;
  std::memcpy(&magic, header, 4);
  std::memcpy(&version, header + 4, 4);
  std::memcpy(dims, header + 8, sizeof(dims));
  const std::uint8_t shared = header[36];
  std::memcpy(&group_size, header + 37, 4);
  if (magic != kLlama2cMagic) {
    return CorruptData(path + ": wrong magic: expected 0x616b3432 (\"ak42\")");
  }
  if (version != 1 && version != 2) {
    return Unsupported(path + ": llama2.c checkpoint version " + std::to_string(version) +
                       " is not supported (supported: 1 = float32, 2 = Q8_0)");
  }
  if (shared > 1) {
    return CorruptData(path + ": ak42 header shared_classifier flag is " + std::to_string(shared) +
                       ", expected 0 or 1");
  }
  Checkpoint ckpt;
  ckpt.format = CheckpointFormat::kLlama2cVersioned;
  ckpt.version = version;
  ckpt.weight_type = version == 1 ? "F32" : "Q8_0";
  ckpt.file_size = reader.size();
  ModelConfig& c = ckpt.weights.config;
  c.dim = dims[0];
  c.hidden_dim = dims[1];
  c.n_layers = dims[2];
  c.n_heads = dims[3];
  c.n_kv_heads = dims[4];
  c.vocab_size = dims[5];
  c.seq_len = dims[6];
  c.shared_classifier = shared == 1;
  MPCACHE_RETURN_IF_ERROR(ValidateHeaderConfig(c, path));
  ResizeLayers(ckpt.weights);
  auto norms = NormTensors(ckpt.weights);
  auto mats = MatrixTensors(ckpt.weights, !c.shared_classifier);
  std::uint64_t norm_count = 0, mat_count = 0;
  TotalCount(norms, &norm_count);
  TotalCount(mats, &mat_count);
  std::uint64_t expected = kHeaderBytes + 4 * norm_count;
  if (version == 1) {
    expected += 4 * mat_count;
  } else {
    if (group_size <= 0 || c.dim % group_size != 0) {
      return CorruptData(path + ": ak42 v2 group size " + std::to_string(group_size) +
                         " must be positive and divide dim " + std::to_string(c.dim));
    }
    expected += mat_count + 4 * (mat_count / static_cast<std::uint64_t>(group_size));
  }
  if (reader.size() != expected) {
    return CorruptData(path + ": size mismatch: the ak42 v" + std::to_string(version) +
                       " header (" + c.Describe() + ") implies " + Num(expected) +
                       " bytes, the file has " + Num(reader.size()) +
                       (reader.size() < expected ? " (truncated?)" : ""));
  }
  for (TensorRef& t : norms) MPCACHE_RETURN_IF_ERROR(reader.ReadFloats(*t.data, t.count, t.name));
  if (version == 1) {
    for (TensorRef& t : mats) MPCACHE_RETURN_IF_ERROR(reader.ReadFloats(*t.data, t.count, t.name));
    return ckpt;
  }
  const std::uint64_t gs = static_cast<std::uint64_t>(group_size);
  std::vector<std::int8_t> q;
  std::vector<float> scales;
  for (TensorRef& t : mats) {
    q.resize(t.count);
    MPCACHE_RETURN_IF_ERROR(reader.Read(q.data(), t.count, t.name + " (int8)"));
    MPCACHE_RETURN_IF_ERROR(reader.ReadFloats(scales, t.count / gs, t.name + " (scales)"));
    t.data->resize(t.count);
    float* dst = t.data->data();
    for (std::uint64_t i = 0; i < t.count; ++i) dst[i] = static_cast<float>(q[i]) * scales[i / gs];
  }
  return ckpt;
}

}  // namespace mpcache::model::internal

namespace mpcache::model {

Status WriteLlama2cVersioned(const ModelWeights& weights, const std::string& path, int version) {
  if (version != 1 && version != 2) {
    return InvalidArgument("ak42 version must be 1 (float32) or 2 (Q8_0), got " +
                           std::to_string(version));
  }
  MPCACHE_RETURN_IF_ERROR(weights.CheckShapes());
  const ModelConfig& c = weights.config;
  std::int32_t group_size = 64;
  while (c.dim % group_size != 0) group_size /= 2;
  std::uint8_t header[256] = {};
  const std::uint32_t magic = kLlama2cMagic;
  const std::int32_t dims[7] = {c.dim,        c.hidden_dim, c.n_layers, c.n_heads,
                                c.n_kv_heads, c.vocab_size, c.seq_len};
  std::memcpy(header, &magic, 4);
  std::memcpy(header + 4, &version, 4);
  std::memcpy(header + 8, dims, sizeof(dims));
  header[36] = c.shared_classifier ? 1 : 0;
  if (version == 2) std::memcpy(header + 37, &group_size, 4);

  MPCACHE_ASSIGN_OR_RETURN(FileWriter out, FileWriter::Create(path));
  MPCACHE_RETURN_IF_ERROR(out.Write(header, sizeof(header)));
  // The tensor lists take non-const pointers; we only read through them.
  ModelWeights& w = const_cast<ModelWeights&>(weights);
  for (const internal::TensorRef& t : internal::NormTensors(w)) {
    MPCACHE_RETURN_IF_ERROR(out.WriteFloats(*t.data));
  }
  std::vector<std::int8_t> q;
  std::vector<float> scales;
  for (const internal::TensorRef& t : internal::MatrixTensors(w, !c.shared_classifier)) {
    const std::vector<float>& x = *t.data;
    if (version == 1) {
      MPCACHE_RETURN_IF_ERROR(out.WriteFloats(x));
      continue;
    }
    const std::size_t gs = static_cast<std::size_t>(group_size);
    q.resize(x.size());
    scales.resize(x.size() / gs);
    for (std::size_t g = 0; g < scales.size(); ++g) {
      float wmax = 0.0f;
      for (std::size_t i = 0; i < gs; ++i) wmax = std::max(wmax, std::fabs(x[g * gs + i]));
      const float scale = wmax / 127.0f;
      scales[g] = scale;
      for (std::size_t i = 0; i < gs; ++i) {
        const float v = scale > 0.0f ? std::round(x[g * gs + i] / scale) : 0.0f;
        q[g * gs + i] = static_cast<std::int8_t>(std::clamp(v, -127.0f, 127.0f));
      }
    }
    MPCACHE_RETURN_IF_ERROR(out.Write(q.data(), q.size()));
    MPCACHE_RETURN_IF_ERROR(out.WriteFloats(scales));
  }
  return out.Close();
}

}  // namespace mpcache::model
