#include "model/compact_model.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cstring>

#include "model/checkpoint.h"
#include "model/file_io.h"
#include "model/gguf.h"

namespace mpcache::model {
namespace {

std::string Num(std::uint64_t v) {
  return std::to_string(v);
}

bool IsCompactType(std::uint32_t t) {
  return t == static_cast<std::uint32_t>(GgmlType::kQ8_0) ||
         t == static_cast<std::uint32_t>(GgmlType::kF16);
}

// Every scale (Q8_0) or value (F16) finite; the largest |value x 2^24|.
Status CheckMatrix(const std::string& path, CompactMatrix& m) {
  std::int64_t worst = 0;
  for (std::size_t r = 0; r < m.rows; ++r) {
    const std::uint8_t* row = m.row(r);
    const bool q8 = m.type == CompactType::kQ8_0;
    const std::size_t n = q8 ? m.cols / kQ8Block : m.cols;
    const std::size_t stride = q8 ? kQ8BlockBytes : 2;
    for (std::size_t k = 0; k < n; ++k) {
      std::uint16_t h;
      std::memcpy(&h, row + k * stride, 2);
      if (((h >> 10) & 0x1F) == 0x1F) {
        return CorruptData(path + ": tensor '" + m.name + "' has an infinite or NaN " +
                           (q8 ? "block scale (row " + Num(r) + ", block " + Num(k) + ")"
                               : "value (row " + Num(r) + ", column " + Num(k) + ")") +
                           "; such a checkpoint has no integer form");
      }
      worst = std::max(worst, std::abs(ScaledHalf(h)));
    }
  }
  m.max_scaled = worst;
  return Status::Ok();
}

}  // namespace

std::string_view CompactTypeName(CompactType type) {
  return type == CompactType::kQ8_0 ? "Q8_0" : "F16";
}

std::int64_t CompactMatrix::At(std::size_t r, std::size_t c) const {
  const std::uint8_t* p = row(r);
  std::uint16_t h;
  if (type == CompactType::kF16) {
    std::memcpy(&h, p + 2 * c, 2);
    return ScaledHalf(h);
  }
  const std::uint8_t* block = p + c / kQ8Block * kQ8BlockBytes;
  std::memcpy(&h, block, 2);
  return ScaledHalf(h) * static_cast<std::int8_t>(block[2 + c % kQ8Block]);
}

CompactMatrix CompactMatrix::Rows(std::size_t first, std::size_t count) const {
  CompactMatrix m = *this;
  m.data = row(first);
  m.rows = count;
  return m;
}

std::uint64_t CompactModel::LayerMatrixBytes() const {
  std::uint64_t n = classifier().bytes();
  for (const CompactLayer& l : layers) {
    for (const CompactMatrix* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w1, &l.w2, &l.w3}) {
      n += m->bytes();
    }
  }
  return n;
}

Result<std::shared_ptr<const CompactModel>> CompactModel::FirstLayers(int n) const {
  if (n < 1 || n > config.n_layers) {
    return InvalidArgument("cannot keep " + std::to_string(n) + " layers of a " +
                           std::to_string(config.n_layers) + "-layer model");
  }
  auto m = std::make_shared<CompactModel>(*this);
  m->layers.resize(static_cast<std::size_t>(n));
  m->config.n_layers = n;
  return std::shared_ptr<const CompactModel>(std::move(m));
}

Result<bool> CompactModel::IsCompactCheckpoint(const std::string& path) {
  MPCACHE_ASSIGN_OR_RETURN(CheckpointFormat format, DetectCheckpointFormat(path));
  if (format != CheckpointFormat::kGguf) return false;
  MPCACHE_ASSIGN_OR_RETURN(FileReader reader, FileReader::Open(path));
  MPCACHE_ASSIGN_OR_RETURN(GgufFile file, ReadGgufHeader(reader));
  bool any = false;
  for (const GgufTensorInfo& t : file.tensors) {
    if (t.dims.size() != 2) continue;  // norms
    if (!IsCompactType(t.type)) return false;
    any = true;
  }
  return any;
}

Result<std::shared_ptr<const CompactModel>> CompactModel::Open(const std::string& path,
                                                               const CompactOpenOptions& options) {
  MPCACHE_ASSIGN_OR_RETURN(CheckpointFormat format, DetectCheckpointFormat(path));
  if (format != CheckpointFormat::kGguf) {
    return Unsupported(path + " is a " + std::string(FormatName(format)) +
                       " checkpoint: the compact (memory-mapped) weights read GGUF Q8_0 or F16; "
                       "this file loads through its float32 form instead");
  }
  MPCACHE_ASSIGN_OR_RETURN(FileReader reader, FileReader::Open(path));
  MPCACHE_ASSIGN_OR_RETURN(GgufFile file, ReadGgufHeader(reader));
  auto m = std::make_shared<CompactModel>();
  MPCACHE_ASSIGN_OR_RETURN(m->config, GgufModelConfig(file, path));
  m->gguf_version = static_cast<int>(file.version);
  MPCACHE_ASSIGN_OR_RETURN(MappedFile map, MappedFile::Open(path));
  if (map.size() != reader.size()) {
    return IoError(path + ": the file changed while it was opened (size " + Num(reader.size()) +
                   " then " + Num(map.size()) + ")");
  }
  m->map_ = std::make_shared<const MappedFile>(std::move(map));
  const std::uint8_t* base = m->map_->data();
  const ModelConfig& c = m->config;
  const std::uint64_t d = c.dim, h = c.hidden_dim, kv = c.kv_dim(), v = c.vocab_size;

  std::string types;
  const auto matrix = [&](const std::string& name, std::uint64_t rows, std::uint64_t cols,
                          CompactMatrix* out) -> Status {
    const GgufTensorInfo* t = file.FindTensor(name);
    if (t == nullptr) return CorruptData(path + ": GGUF has no tensor '" + name + "'");
    const std::vector<std::uint64_t> want = {cols, rows};
    if (t->dims != want) {
      return CorruptData(path + ": tensor '" + name + "' has shape " + GgufShape(t->dims) +
                         ", the model's hyper-parameters need " + GgufShape(want));
    }
    if (!IsCompactType(t->type)) {
      return Unsupported(path + ": tensor '" + name + "' is " + GgmlTypeName(t->type) +
                         "; the compact (memory-mapped) weights read Q8_0 or F16 matrices — "
                         "this file loads through its float32 form instead");
    }
    out->type = t->type == static_cast<std::uint32_t>(GgmlType::kQ8_0) ? CompactType::kQ8_0
                                                                       : CompactType::kF16;
    out->data = base + file.data_offset + t->offset;
    out->rows = rows;
    out->cols = cols;
    out->name = name;
    const std::string tn(CompactTypeName(out->type));
    types = types.empty() || types == tn ? tn : "mixed";
    return Status::Ok();
  };
  const auto gain = [&](const std::string& name, std::vector<float>* out) -> Status {
    const GgufTensorInfo* t = file.FindTensor(name);
    if (t == nullptr) return CorruptData(path + ": GGUF has no tensor '" + name + "'");
    if (t->dims != std::vector<std::uint64_t>{d}) {
      return CorruptData(path + ": tensor '" + name + "' has shape " + GgufShape(t->dims) +
                         ", expected [" + Num(d) + "]");
    }
    MPCACHE_ASSIGN_OR_RETURN(*out, ReadGgufTensor(reader, file, *t));
    return Status::Ok();
  };
  MPCACHE_RETURN_IF_ERROR(matrix("token_embd.weight", v, d, &m->embedding));
  m->layers.resize(static_cast<std::size_t>(c.n_layers));
  for (std::size_t l = 0; l < m->layers.size(); ++l) {
    CompactLayer& lw = m->layers[l];
    const std::string p = "blk." + std::to_string(l) + ".";
    MPCACHE_RETURN_IF_ERROR(gain(p + "attn_norm.weight", &lw.rms_att));
    MPCACHE_RETURN_IF_ERROR(matrix(p + "attn_q.weight", d, d, &lw.wq));
    MPCACHE_RETURN_IF_ERROR(matrix(p + "attn_k.weight", kv, d, &lw.wk));
    MPCACHE_RETURN_IF_ERROR(matrix(p + "attn_v.weight", kv, d, &lw.wv));
    MPCACHE_RETURN_IF_ERROR(matrix(p + "attn_output.weight", d, d, &lw.wo));
    MPCACHE_RETURN_IF_ERROR(gain(p + "ffn_norm.weight", &lw.rms_ffn));
    MPCACHE_RETURN_IF_ERROR(matrix(p + "ffn_gate.weight", h, d, &lw.w1));
    MPCACHE_RETURN_IF_ERROR(matrix(p + "ffn_down.weight", d, h, &lw.w2));
    MPCACHE_RETURN_IF_ERROR(matrix(p + "ffn_up.weight", h, d, &lw.w3));
  }
  MPCACHE_RETURN_IF_ERROR(gain("output_norm.weight", &m->rms_final));
  if (!c.shared_classifier) {
    MPCACHE_RETURN_IF_ERROR(matrix("output.weight", v, d, &m->wcls));
    // Converters often store a tied classifier explicitly; keep one.
    if (m->wcls.type == m->embedding.type &&
        std::memcmp(m->wcls.data, m->embedding.data, m->wcls.bytes()) == 0) {
      m->config.shared_classifier = true;
      m->wcls = CompactMatrix();
    }
  }
  m->weight_type = types;
  MPCACHE_ASSIGN_OR_RETURN(m->vocabulary, GgufVocabulary(file, path, &m->vocabulary_problem));

  if (!options.check) return std::shared_ptr<const CompactModel>(std::move(m));
  // One pass over the whole file: its SHA-256 (the model's identity), in chunks.
  {
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
    if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) {
      return Internal("SHA-256 is not available from OpenSSL");
    }
    constexpr std::uint64_t kChunk = std::uint64_t{64} << 20;
    const std::uint64_t total = m->map_->size();
    for (std::uint64_t off = 0; off < total; off += kChunk) {
      const std::uint64_t n = std::min(kChunk, total - off);
      EVP_DigestUpdate(ctx.get(), base + off, static_cast<std::size_t>(n));
      if (options.progress) options.progress(off + n, total);
    }
    unsigned int len = 0;
    EVP_DigestFinal_ex(ctx.get(), m->file_sha256.data(), &len);
  }
  // Every scale/value finite, and each matrix's largest one.
  MPCACHE_RETURN_IF_ERROR(CheckMatrix(path, m->embedding));
  for (CompactLayer& lw : m->layers) {
    for (CompactMatrix* x : {&lw.wq, &lw.wk, &lw.wv, &lw.wo, &lw.w1, &lw.w2, &lw.w3}) {
      MPCACHE_RETURN_IF_ERROR(CheckMatrix(path, *x));
    }
  }
  if (!m->config.shared_classifier) MPCACHE_RETURN_IF_ERROR(CheckMatrix(path, m->wcls));
  m->checked = true;
  return std::shared_ptr<const CompactModel>(std::move(m));
}

}  // namespace mpcache::model
