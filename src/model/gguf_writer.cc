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

}  // namespace

void AppendGgufEncoded(std::span<const float> x, GgmlType type, std::vector<std::uint8_t>& out) {
  const std::size_t at = out.size();
  if (type == GgmlType::kF32) {
    out.resize(at + x.size() * 4);
    std::memcpy(out.data() + at, x.data(), x.size() * 4);
  } else if (type == GgmlType::kF16) {
    out.resize(at + x.size() * 2);
    for (std::size_t i = 0; i < x.size(); ++i) {
      const std::uint16_t h = FloatToHalf(x[i]);
      std::memcpy(out.data() + at + 2 * i, &h, 2);
    }
  } else {  // Q8_0: llama.cpp's quantize_row_q8_0_ref (d = amax / 127, q = round(x / d))
    out.resize(at + x.size() / 32 * 34);
    std::uint8_t* o = out.data() + at;
    for (std::size_t b = 0; b < x.size() / 32; ++b) {
      float amax = 0.0f;
      for (std::size_t k = 0; k < 32; ++k) amax = std::max(amax, std::fabs(x[b * 32 + k]));
      const float d = amax / 127.0f;
      const float id = d != 0.0f ? 1.0f / d : 0.0f;
      const std::uint16_t dh = FloatToHalf(d);
      std::memcpy(o + b * 34, &dh, 2);
      for (std::size_t k = 0; k < 32; ++k) {
        const float q = std::clamp(std::round(x[b * 32 + k] * id), -127.0f, 127.0f);
        o[b * 34 + 2 + k] = static_cast<std::uint8_t>(static_cast<std::int8_t>(q));
      }
    }
  }
}

std::uint64_t GgufTensorPlan::bytes() const {
  std::uint64_t n = 1;
  for (std::uint64_t d : dims) n *= d;
  switch (type) {
    case GgmlType::kF32:
      return n * 4;
    case GgmlType::kF16:
    case GgmlType::kBF16:
      return n * 2;
    case GgmlType::kQ8_0:
      return n / 32 * 34;
  }
  return 0;
}

std::vector<GgufTensorPlan> LlamaGgufTensors(const ModelConfig& c, GgmlType matrix_type) {
  const std::uint64_t d = c.dim, h = c.hidden_dim, kv = c.kv_dim(), v = c.vocab_size;
  std::vector<GgufTensorPlan> t;
  t.push_back({"token_embd.weight", {d, v}, matrix_type});
  t.push_back({"output_norm.weight", {d}, GgmlType::kF32});
  if (!c.shared_classifier) t.push_back({"output.weight", {d, v}, matrix_type});
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    t.push_back({p + "attn_norm.weight", {d}, GgmlType::kF32});
    t.push_back({p + "attn_q.weight", {d, d}, matrix_type});
    t.push_back({p + "attn_k.weight", {d, kv}, matrix_type});
    t.push_back({p + "attn_v.weight", {d, kv}, matrix_type});
    t.push_back({p + "attn_output.weight", {d, d}, matrix_type});
    t.push_back({p + "ffn_norm.weight", {d}, GgmlType::kF32});
    t.push_back({p + "ffn_gate.weight", {d, h}, matrix_type});
    t.push_back({p + "ffn_down.weight", {h, d}, matrix_type});
    t.push_back({p + "ffn_up.weight", {d, h}, matrix_type});
  }
  return t;
}

Result<std::vector<std::uint8_t>> GgufPreamble(const ModelConfig& c, const Vocabulary* vocab,
                                               const std::vector<GgufTensorPlan>& tensors) {
  MPCACHE_RETURN_IF_ERROR(c.Validate());
  for (const GgufTensorPlan& t : tensors) {
    if (t.type != GgmlType::kF32 && t.type != GgmlType::kF16 && t.type != GgmlType::kQ8_0) {
      return InvalidArgument("GGUF writer supports F32, F16 and Q8_0 tensors");
    }
    if (t.type == GgmlType::kQ8_0 && t.dims[0] % 32 != 0) {
      return InvalidArgument("Q8_0 needs rows that are multiples of 32 weights: tensor " + t.name +
                             " has rows of " + std::to_string(t.dims[0]) +
                             " (dim and hidden_dim must be multiples of 32)");
    }
  }
  constexpr std::uint64_t kAlign = kGgufWriteAlign;
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
  GgufBuilder infos;
  std::uint64_t offset = 0;
  for (const GgufTensorPlan& t : tensors) {
    infos.Str(t.name);
    infos.U32(static_cast<std::uint32_t>(t.dims.size()));
    for (std::uint64_t dim : t.dims) infos.U64(dim);
    infos.U32(static_cast<std::uint32_t>(t.type));
    infos.U64(offset);
    offset += (t.bytes() + kAlign - 1) / kAlign * kAlign;
  }
  GgufBuilder out;
  out.U32(kGgufMagic);
  out.U32(3);
  out.U64(tensors.size());
  out.U64(meta.n_kv());
  out.Raw(meta.bytes().data(), meta.bytes().size());
  out.Raw(infos.bytes().data(), infos.bytes().size());
  std::vector<std::uint8_t> bytes = std::move(out.bytes());
  bytes.resize((bytes.size() + kAlign - 1) / kAlign * kAlign, 0);
  return bytes;
}

Status WriteGguf(const ModelWeights& weights, const Vocabulary* vocab, const std::string& path,
                 GgmlType matrix_type) {
  MPCACHE_RETURN_IF_ERROR(weights.CheckShapes());
  if (matrix_type != GgmlType::kF32 && matrix_type != GgmlType::kF16 &&
      matrix_type != GgmlType::kQ8_0) {
    return InvalidArgument("GGUF writer supports F32, F16 and Q8_0 matrices");
  }
  const ModelConfig& c = weights.config;
  const std::vector<GgufTensorPlan> plan = LlamaGgufTensors(c, matrix_type);
  MPCACHE_ASSIGN_OR_RETURN(std::vector<std::uint8_t> preamble, GgufPreamble(c, vocab, plan));
  // The data of each planned tensor, in the same order.
  std::vector<const std::vector<float>*> data;
  data.push_back(&weights.token_embedding);
  data.push_back(&weights.rms_final);
  if (!c.shared_classifier) data.push_back(&weights.wcls);
  for (const LayerWeights& lw : weights.layers) {
    for (const std::vector<float>* t :
         {&lw.rms_att, &lw.wq, &lw.wk, &lw.wv, &lw.wo, &lw.rms_ffn, &lw.w1, &lw.w2, &lw.w3}) {
      data.push_back(t);
    }
  }
  MPCACHE_ASSIGN_OR_RETURN(FileWriter out, FileWriter::Create(path));
  MPCACHE_RETURN_IF_ERROR(out.Write(preamble.data(), preamble.size()));
  const std::vector<std::uint8_t> zeros(kGgufWriteAlign, 0);
  std::vector<std::uint8_t> blob;
  for (std::size_t i = 0; i < plan.size(); ++i) {
    blob.clear();
    AppendGgufEncoded(*data[i], plan[i].type, blob);
    MPCACHE_RETURN_IF_ERROR(out.Write(blob.data(), blob.size()));
    MPCACHE_RETURN_IF_ERROR(out.Write(
        zeros.data(), (kGgufWriteAlign - blob.size() % kGgufWriteAlign) % kGgufWriteAlign));
  }
  return out.Close();
}

}  // namespace mpcache::model
