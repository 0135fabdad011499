// GGUF v3 writer for llama-architecture models (tests, conversions, interop).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "model/gguf.h"

namespace mpcache::model {

std::uint16_t FloatToHalf(float f) {
  std::uint32_t x;
  std::memcpy(&x, &f, 4);
  const std::uint16_t sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t abs = x & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u) {  // inf / nan
    return static_cast<std::uint16_t>(sign | 0x7C00u | (abs > 0x7F800000u ? 0x200u : 0u));
  }
  if (abs >= 0x477FF000u) return static_cast<std::uint16_t>(sign | 0x7C00u);  // overflow
  if (abs < 0x38800000u) {  // below the smallest normal half: subnormal or zero
    float a;
    std::memcpy(&a, &abs, 4);
    return static_cast<std::uint16_t>(sign |
                                      static_cast<std::uint16_t>(std::nearbyint(a * 16777216.0f)));
  }
  std::uint32_t r = abs + 0xFFFu + ((abs >> 13) & 1u);  // round to nearest even
  r -= 112u << 23;                                      // rebias exponent 127 -> 15
  return static_cast<std::uint16_t>(sign | (r >> 13));
}

namespace {

class GgufBuilder {
 public:
  void Str(const std::string& s) {
    U64(s.size());
    bytes_.insert(bytes_.end(), s.begin(), s.end());
  }
  void U32(std::uint32_t v) { Raw(&v, 4); }
  void U64(std::uint64_t v) { Raw(&v, 8); }
  void F32(float v) { Raw(&v, 4); }
  void Raw(const void* p, std::size_t n) {
    const auto* b = static_cast<const std::uint8_t*>(p);
    bytes_.insert(bytes_.end(), b, b + n);
  }
  void KeyU32(const std::string& k, std::uint32_t v) {
    Str(k);
    U32(static_cast<std::uint32_t>(GgufValueType::kUint32));
    U32(v);
    ++n_kv_;
  }
  void KeyF32(const std::string& k, float v) {
    Str(k);
    U32(static_cast<std::uint32_t>(GgufValueType::kFloat32));
    F32(v);
    ++n_kv_;
  }
  void KeyStr(const std::string& k, const std::string& v) {
    Str(k);
    U32(static_cast<std::uint32_t>(GgufValueType::kString));
    Str(v);
    ++n_kv_;
  }
  void KeyArrayHeader(const std::string& k, GgufValueType elem, std::uint64_t n) {
    Str(k);
    U32(static_cast<std::uint32_t>(GgufValueType::kArray));
    U32(static_cast<std::uint32_t>(elem));
    U64(n);
    ++n_kv_;
  }
  std::vector<std::uint8_t>& bytes() { return bytes_; }
  std::uint64_t n_kv() const { return n_kv_; }

 private:
  std::vector<std::uint8_t> bytes_;
  std::uint64_t n_kv_ = 0;
};

struct PendingTensor {
  std::string name;
  std::vector<std::uint64_t> dims;
  const std::vector<float>* data;
  GgmlType type;
};

std::vector<std::uint8_t> Encode(const std::vector<float>& x, GgmlType type) {
  std::vector<std::uint8_t> out;
  if (type == GgmlType::kF32) {
    out.resize(x.size() * 4);
    std::memcpy(out.data(), x.data(), out.size());
  } else if (type == GgmlType::kF16) {
    out.resize(x.size() * 2);
    for (std::size_t i = 0; i < x.size(); ++i) {
      const std::uint16_t h = FloatToHalf(x[i]);
      std::memcpy(out.data() + 2 * i, &h, 2);
    }
  } else {  // Q8_0
    out.resize(x.size() / 32 * 34);
    for (std::size_t b = 0; b < x.size() / 32; ++b) {
      float amax = 0.0f;
      for (std::size_t k = 0; k < 32; ++k) amax = std::max(amax, std::fabs(x[b * 32 + k]));
      const float d = amax / 127.0f;
      const float id = d != 0.0f ? 1.0f / d : 0.0f;
      const std::uint16_t dh = FloatToHalf(d);
      std::memcpy(out.data() + b * 34, &dh, 2);
      for (std::size_t k = 0; k < 32; ++k) {
        const float q = std::clamp(std::round(x[b * 32 + k] * id), -127.0f, 127.0f);
        out[b * 34 + 2 + k] = static_cast<std::uint8_t>(static_cast<std::int8_t>(q));
      }
    }
  }
  return out;
}

}  // namespace

Status WriteGguf(const ModelWeights& weights, const Vocabulary* vocab, const std::string& path,
                 GgmlType matrix_type) {
  MPCACHE_RETURN_IF_ERROR(weights.CheckShapes());
  const ModelConfig& c = weights.config;
  if (matrix_type != GgmlType::kF32 && matrix_type != GgmlType::kF16 &&
      matrix_type != GgmlType::kQ8_0) {
    return InvalidArgument("GGUF writer supports F32, F16 and Q8_0 matrices");
  }
  if (matrix_type == GgmlType::kQ8_0 && (c.dim % 32 != 0 || c.hidden_dim % 32 != 0)) {
    return InvalidArgument("Q8_0 needs dim and hidden_dim to be multiples of 32");
  }
  constexpr std::uint64_t kAlign = 32;
  GgufBuilder meta;
  meta.KeyStr("general.architecture", "llama");
  meta.KeyU32("general.alignment", kAlign);
  meta.KeyU32("llama.context_length", static_cast<std::uint32_t>(c.seq_len));
  meta.KeyU32("llama.embedding_length", static_cast<std::uint32_t>(c.dim));
  meta.KeyU32("llama.feed_forward_length", static_cast<std::uint32_t>(c.hidden_dim));
  meta.KeyU32("llama.block_count", static_cast<std::uint32_t>(c.n_layers));
  meta.KeyU32("llama.attention.head_count", static_cast<std::uint32_t>(c.n_heads));
  meta.KeyU32("llama.attention.head_count_kv", static_cast<std::uint32_t>(c.n_kv_heads));
  meta.KeyU32("llama.rope.dimension_count", static_cast<std::uint32_t>(c.head_size()));
  meta.KeyF32("llama.rope.freq_base", c.rope_theta);
  meta.KeyF32("llama.attention.layer_norm_rms_epsilon", c.norm_eps);
  if (vocab != nullptr) {
    if (vocab->tokens.size() != vocab->scores.size()) {
      return InvalidArgument("vocabulary has different numbers of tokens and scores");
    }
    const std::size_t n = vocab->tokens.size();
    meta.KeyStr("tokenizer.ggml.model", "llama");
    meta.KeyArrayHeader("tokenizer.ggml.tokens", GgufValueType::kString, n);
    for (std::size_t i = 0; i < n; ++i) {
      std::string piece;
      if (static_cast<int>(i) == vocab->bos_id) {
        piece = "<s>";
      } else if (static_cast<int>(i) == vocab->eos_id) {
        piece = "</s>";
      } else {
        for (char ch : vocab->tokens[i])
          piece += ch == ' ' ? std::string("\xE2\x96\x81") : std::string(1, ch);
      }
      meta.Str(piece);
    }
    meta.KeyArrayHeader("tokenizer.ggml.scores", GgufValueType::kFloat32, n);
    for (float s : vocab->scores) meta.F32(s);
    meta.KeyU32("tokenizer.ggml.bos_token_id", static_cast<std::uint32_t>(vocab->bos_id));
    meta.KeyU32("tokenizer.ggml.eos_token_id", static_cast<std::uint32_t>(vocab->eos_id));
  }
  const std::uint64_t d = c.dim, h = c.hidden_dim, kv = c.kv_dim(), v = c.vocab_size;
  std::vector<PendingTensor> tensors;
  tensors.push_back({"token_embd.weight", {d, v}, &weights.token_embedding, matrix_type});
  tensors.push_back({"output_norm.weight", {d}, &weights.rms_final, GgmlType::kF32});
  if (!c.shared_classifier)
    tensors.push_back({"output.weight", {d, v}, &weights.wcls, matrix_type});
  for (std::size_t l = 0; l < weights.layers.size(); ++l) {
    const LayerWeights& lw = weights.layers[l];
    const std::string p = "blk." + std::to_string(l) + ".";
    tensors.push_back({p + "attn_norm.weight", {d}, &lw.rms_att, GgmlType::kF32});
    tensors.push_back({p + "attn_q.weight", {d, d}, &lw.wq, matrix_type});
    tensors.push_back({p + "attn_k.weight", {d, kv}, &lw.wk, matrix_type});
    tensors.push_back({p + "attn_v.weight", {d, kv}, &lw.wv, matrix_type});
    tensors.push_back({p + "attn_output.weight", {d, d}, &lw.wo, matrix_type});
    tensors.push_back({p + "ffn_norm.weight", {d}, &lw.rms_ffn, GgmlType::kF32});
    tensors.push_back({p + "ffn_gate.weight", {d, h}, &lw.w1, matrix_type});
    tensors.push_back({p + "ffn_down.weight", {h, d}, &lw.w2, matrix_type});
    tensors.push_back({p + "ffn_up.weight", {d, h}, &lw.w3, matrix_type});
  }
  std::vector<std::vector<std::uint8_t>> blobs;
  GgufBuilder infos;
  std::uint64_t offset = 0;
  for (const PendingTensor& t : tensors) {
    blobs.push_back(Encode(*t.data, t.type));
    infos.Str(t.name);
    infos.U32(static_cast<std::uint32_t>(t.dims.size()));
    for (std::uint64_t dim : t.dims) infos.U64(dim);
    infos.U32(static_cast<std::uint32_t>(t.type));
    infos.U64(offset);
    offset += (blobs.back().size() + kAlign - 1) / kAlign * kAlign;
  }
  MPCACHE_ASSIGN_OR_RETURN(FileWriter out, FileWriter::Create(path));
  const std::uint32_t header[2] = {kGgufMagic, 3};
  const std::uint64_t counts[2] = {tensors.size(), meta.n_kv()};
  MPCACHE_RETURN_IF_ERROR(out.Write(header, sizeof(header)));
  MPCACHE_RETURN_IF_ERROR(out.Write(counts, sizeof(counts)));
  MPCACHE_RETURN_IF_ERROR(out.Write(meta.bytes().data(), meta.bytes().size()));
  MPCACHE_RETURN_IF_ERROR(out.Write(infos.bytes().data(), infos.bytes().size()));
  const std::uint64_t pos = 24 + meta.bytes().size() + infos.bytes().size();
  const std::vector<std::uint8_t> zeros(kAlign, 0);
  MPCACHE_RETURN_IF_ERROR(out.Write(zeros.data(), (kAlign - pos % kAlign) % kAlign));
  for (const auto& blob : blobs) {
    MPCACHE_RETURN_IF_ERROR(out.Write(blob.data(), blob.size()));
    MPCACHE_RETURN_IF_ERROR(out.Write(zeros.data(), (kAlign - blob.size() % kAlign) % kAlign));
  }
  return out.Close();
}

}  // namespace mpcache::model
