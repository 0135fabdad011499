// GGUF metadata and tensors -> Checkpoint (llama architecture), and the embedded
// SentencePiece vocabulary -> Vocabulary.
#include <cstring>

#include "model/checkpoint_internal.h"
#include "model/gguf.h"

namespace mpcache::model {

namespace {

std::string Num(std::uint64_t v) {
  return std::to_string(v);
}

Result<std::int64_t> GetInt(const GgufFile& f, const std::string& path, const std::string& key,
                            std::optional<std::int64_t> fallback = std::nullopt) {
  const GgufValue* v = f.Find(key);
  if (v == nullptr) {
    if (fallback) return *fallback;
    return CorruptData(path + ": GGUF metadata lacks '" + key + "'");
  }
  if (!v->IsInteger()) return CorruptData(path + ": GGUF metadata '" + key + "' is not an integer");
  if (v->i < 0 || v->i > (std::int64_t{1} << 30)) {
    return CorruptData(path + ": GGUF metadata '" + key + "' = " + std::to_string(v->i) +
                       " is out of range");
  }
  return v->i;
}

Result<float> GetFloat(const GgufFile& f, const std::string& path, const std::string& key,
                       float fallback) {
  const GgufValue* v = f.Find(key);
  if (v == nullptr) return fallback;
  if (!v->IsFloat()) return CorruptData(path + ": GGUF metadata '" + key + "' is not a float");
  return static_cast<float>(v->f);
}

// SentencePiece's word-boundary marker U+2581, which llama2.c's export writes as ' '.
std::string ReplaceSpaceMarker(const std::string& piece) {
  static const std::string kMarker = "\xE2\x96\x81";
  std::string out;
  out.reserve(piece.size());
  for (std::size_t i = 0; i < piece.size();) {
    if (piece.compare(i, kMarker.size(), kMarker) == 0) {
      out += ' ';
      i += kMarker.size();
    } else {
      out += piece[i++];
    }
  }
  return out;
}

// Returns nullopt with *problem set when the file has no usable SentencePiece vocabulary.
Result<std::optional<Vocabulary>> ReadVocabulary(const GgufFile& f, const std::string& path,
                                                 std::string* problem) {
  const GgufValue* tokens = f.Find("tokenizer.ggml.tokens");
  if (tokens == nullptr) {
    *problem = "no tokenizer.ggml.tokens metadata";
    return std::optional<Vocabulary>();
  }
  if (const GgufValue* m = f.Find("tokenizer.ggml.model"); m != nullptr && m->s != "llama") {
    *problem = "tokenizer.ggml.model is '" + m->s + "', only 'llama' (SentencePiece) is supported";
    return std::optional<Vocabulary>();
  }
  if (tokens->type != GgufValueType::kArray || tokens->array_type != GgufValueType::kString) {
    return CorruptData(path + ": tokenizer.ggml.tokens is not an array of strings");
  }
  Vocabulary vocab;
  const std::size_t n = tokens->array.size();
  vocab.tokens.reserve(n);
  for (const GgufValue& t : tokens->array) vocab.tokens.push_back(ReplaceSpaceMarker(t.s));
  vocab.scores.assign(n, 0.0f);
  if (const GgufValue* s = f.Find("tokenizer.ggml.scores")) {
    if (s->type != GgufValueType::kArray || s->array.size() != n ||
        (s->array_type != GgufValueType::kFloat32 && s->array_type != GgufValueType::kFloat64)) {
      return CorruptData(path + ": tokenizer.ggml.scores must be " + Num(n) +
                         " floats (one per token)");
    }
    for (std::size_t i = 0; i < n; ++i) vocab.scores[i] = static_cast<float>(s->array[i].f);
  }
  MPCACHE_ASSIGN_OR_RETURN(std::int64_t bos, GetInt(f, path, "tokenizer.ggml.bos_token_id", 1));
  MPCACHE_ASSIGN_OR_RETURN(std::int64_t eos, GetInt(f, path, "tokenizer.ggml.eos_token_id", 2));
  if (bos >= static_cast<std::int64_t>(n) || eos >= static_cast<std::int64_t>(n)) {
    return CorruptData(path + ": BOS/EOS token ids " + Num(bos) + "/" + Num(eos) +
                       " are outside the " + Num(n) + "-token vocabulary");
  }
  vocab.bos_id = static_cast<int>(bos);
  vocab.eos_id = static_cast<int>(eos);
  // llama2.c's tokenizer export writes BOS/EOS as "\n<s>\n" / "\n</s>\n".
  vocab.tokens[static_cast<std::size_t>(bos)] = "\n<s>\n";
  vocab.tokens[static_cast<std::size_t>(eos)] = "\n</s>\n";
  for (const auto& t : vocab.tokens) {
    vocab.max_token_length = std::max(vocab.max_token_length, static_cast<std::uint32_t>(t.size()));
  }
  return std::optional<Vocabulary>(std::move(vocab));
}

}  // namespace

Result<ModelConfig> GgufModelConfig(const GgufFile& file, const std::string& path) {
  if (const GgufValue* arch = file.Find("general.architecture"); arch && arch->s != "llama") {
    return Unsupported(path + ": GGUF architecture '" + arch->s +
                       "' is not supported (only 'llama')");
  }
  const GgufTensorInfo* embd = file.FindTensor("token_embd.weight");
  if (embd == nullptr) return CorruptData(path + ": GGUF has no tensor 'token_embd.weight'");
  ModelConfig c;
  MPCACHE_ASSIGN_OR_RETURN(std::int64_t dim, GetInt(file, path, "llama.embedding_length"));
  MPCACHE_ASSIGN_OR_RETURN(std::int64_t hidden, GetInt(file, path, "llama.feed_forward_length"));
  MPCACHE_ASSIGN_OR_RETURN(std::int64_t layers, GetInt(file, path, "llama.block_count"));
  MPCACHE_ASSIGN_OR_RETURN(std::int64_t heads, GetInt(file, path, "llama.attention.head_count"));
  MPCACHE_ASSIGN_OR_RETURN(std::int64_t kv_heads,
                           GetInt(file, path, "llama.attention.head_count_kv", heads));
  MPCACHE_ASSIGN_OR_RETURN(std::int64_t ctx, GetInt(file, path, "llama.context_length"));
  MPCACHE_ASSIGN_OR_RETURN(c.rope_theta, GetFloat(file, path, "llama.rope.freq_base", 10000.0f));
  MPCACHE_ASSIGN_OR_RETURN(c.norm_eps,
                           GetFloat(file, path, "llama.attention.layer_norm_rms_epsilon", 1e-5f));
  c.dim = static_cast<int>(dim);
  c.hidden_dim = static_cast<int>(hidden);
  c.n_layers = static_cast<int>(layers);
  c.n_heads = static_cast<int>(heads);
  c.n_kv_heads = static_cast<int>(kv_heads);
  c.seq_len = static_cast<int>(ctx);
  c.vocab_size =
      embd->dims.size() == 2 && embd->dims[1] < (1u << 30) ? static_cast<int>(embd->dims[1]) : 0;
  c.shared_classifier = file.FindTensor("output.weight") == nullptr;
  MPCACHE_RETURN_IF_ERROR(internal::ValidateHeaderConfig(c, path));
  if (const GgufValue* rd = file.Find("llama.rope.dimension_count");
      rd != nullptr && rd->IsInteger() && rd->i != c.head_size()) {
    return Unsupported(path + ": partial rotary embeddings (rope.dimension_count " +
                       std::to_string(rd->i) + " != head size " + Num(c.head_size()) +
                       ") are not supported");
  }
  return c;
}

Result<std::optional<Vocabulary>> GgufVocabulary(const GgufFile& file, const std::string& path,
                                                 std::string* problem) {
  return ReadVocabulary(file, path, problem);
}

std::string GgufShape(const std::vector<std::uint64_t>& dims) {
  std::string s = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + Num(dims[i]);
  return s + "]";
}

Result<Checkpoint> LoadGgufCheckpoint(FileReader& reader) {
  const std::string path = reader.path();
  MPCACHE_ASSIGN_OR_RETURN(GgufFile file, ReadGgufHeader(reader));
  Checkpoint ckpt;
  ckpt.format = CheckpointFormat::kGguf;
  ckpt.version = static_cast<int>(file.version);
  ckpt.file_size = reader.size();
  MPCACHE_ASSIGN_OR_RETURN(ckpt.weights.config, GgufModelConfig(file, path));
  ModelConfig& c = ckpt.weights.config;

  const std::uint64_t d = c.dim, h = c.hidden_dim, kv = c.kv_dim(), v = c.vocab_size;
  std::string types;
  auto load = [&](const std::string& name, const std::vector<std::uint64_t>& dims,
                  std::vector<float>* out) -> Status {
    const GgufTensorInfo* t = file.FindTensor(name);
    if (t == nullptr) return CorruptData(path + ": GGUF has no tensor '" + name + "'");
    if (t->dims != dims) {
      return CorruptData(path + ": tensor '" + name + "' has shape " + GgufShape(t->dims) +
                         ", the model's hyper-parameters need " + GgufShape(dims));
    }
    MPCACHE_ASSIGN_OR_RETURN(*out, ReadGgufTensor(reader, file, *t));
    if (dims.size() == 2) {
      const std::string tn = GgmlTypeName(t->type);
      if (types.empty()) {
        types = tn;
      } else if (types != tn) {
        types = "mixed";
      }
    }
    return Status::Ok();
  };
  ModelWeights& w = ckpt.weights;
  internal::ResizeLayers(w);
  MPCACHE_RETURN_IF_ERROR(load("token_embd.weight", {d, v}, &w.token_embedding));
  for (std::size_t l = 0; l < w.layers.size(); ++l) {
    LayerWeights& lw = w.layers[l];
    const std::string p = "blk." + std::to_string(l) + ".";
    MPCACHE_RETURN_IF_ERROR(load(p + "attn_norm.weight", {d}, &lw.rms_att));
    MPCACHE_RETURN_IF_ERROR(load(p + "attn_q.weight", {d, d}, &lw.wq));
    MPCACHE_RETURN_IF_ERROR(load(p + "attn_k.weight", {d, kv}, &lw.wk));
    MPCACHE_RETURN_IF_ERROR(load(p + "attn_v.weight", {d, kv}, &lw.wv));
    MPCACHE_RETURN_IF_ERROR(load(p + "attn_output.weight", {d, d}, &lw.wo));
    MPCACHE_RETURN_IF_ERROR(load(p + "ffn_norm.weight", {d}, &lw.rms_ffn));
    MPCACHE_RETURN_IF_ERROR(load(p + "ffn_gate.weight", {d, h}, &lw.w1));
    MPCACHE_RETURN_IF_ERROR(load(p + "ffn_down.weight", {h, d}, &lw.w2));
    MPCACHE_RETURN_IF_ERROR(load(p + "ffn_up.weight", {d, h}, &lw.w3));
  }
  MPCACHE_RETURN_IF_ERROR(load("output_norm.weight", {d}, &w.rms_final));
  if (!c.shared_classifier) {
    MPCACHE_RETURN_IF_ERROR(load("output.weight", {d, v}, &w.wcls));
    // Converters often store a tied classifier explicitly; keep one copy.
    if (std::memcmp(w.wcls.data(), w.token_embedding.data(), w.wcls.size() * sizeof(float)) == 0) {
      c.shared_classifier = true;
      w.wcls = {};
    }
  }
  ckpt.weight_type = types;
  MPCACHE_ASSIGN_OR_RETURN(ckpt.vocabulary, GgufVocabulary(file, path, &ckpt.vocabulary_problem));
  return ckpt;
}

}  // namespace mpcache::model
