// Helpers for the model unit tests: tiny random models and vocabularies, temp folders.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "model/vocabulary.h"
#include "model/weights.h"

namespace mpcache::model::testing {

// A fresh folder under the system temp dir, removed on destruction.
class TempDir {
 public:
  TempDir() {
    std::string templ = (std::filesystem::temp_directory_path() / "mpcache_model_XXXXXX").string();
    path_ = ::mkdtemp(templ.data()) ? templ : std::string();
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline std::vector<std::uint8_t> ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void WriteBytes(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

// Keep only the first n bytes. (erase rather than resize: GCC 12 with sanitizers reports a
// spurious -Wstringop-overflow for shrinking resize calls.)
inline void KeepHead(std::vector<std::uint8_t>& bytes, std::size_t n) {
  if (n < bytes.size()) bytes.erase(bytes.begin() + static_cast<std::ptrdiff_t>(n), bytes.end());
}

// Deterministic values in [-scale, scale).
inline void Fill(std::vector<float>& v, std::size_t n, std::uint64_t& state, float scale) {
  v.resize(n);
  for (auto& x : v) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    x = scale * (static_cast<float>(state >> 40) / static_cast<float>(1ull << 24) * 2.0f - 1.0f);
  }
}

inline ModelWeights TinyModel(std::uint64_t seed = 1, bool shared = true, int dim = 32,
                              int hidden = 64, int layers = 2, int heads = 4, int kv_heads = 2,
                              int vocab = 300, int seq = 16) {
  ModelWeights w;
  ModelConfig& c = w.config;
  c.dim = dim;
  c.hidden_dim = hidden;
  c.n_layers = layers;
  c.n_heads = heads;
  c.n_kv_heads = kv_heads;
  c.vocab_size = vocab;
  c.seq_len = seq;
  c.shared_classifier = shared;
  const std::size_t d = dim, h = hidden, kv = c.kv_dim(), v = vocab;
  std::uint64_t s = seed;
  Fill(w.token_embedding, v * d, s, 1.0f);
  w.layers.resize(layers);
  for (auto& l : w.layers) {
    Fill(l.rms_att, d, s, 1.0f);
    Fill(l.wq, d * d, s, 0.3f);
    Fill(l.wk, kv * d, s, 0.3f);
    Fill(l.wv, kv * d, s, 0.3f);
    Fill(l.wo, d * d, s, 0.3f);
    Fill(l.rms_ffn, d, s, 1.0f);
    Fill(l.w1, h * d, s, 0.3f);
    Fill(l.w2, d * h, s, 0.3f);
    Fill(l.w3, h * d, s, 0.3f);
  }
  Fill(w.rms_final, d, s, 1.0f);
  if (!shared) Fill(w.wcls, v * d, s, 0.5f);
  return w;
}

// <unk>, BOS, EOS, 256 byte tokens, then `extra` pieces with descending scores.
inline Vocabulary TinyVocabulary(const std::vector<std::string>& extra) {
  Vocabulary v;
  v.tokens = {"<unk>", "\n<s>\n", "\n</s>\n"};
  v.scores = {0.0f, 0.0f, 0.0f};
  const char* hex = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    v.tokens.push_back(std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">");
    v.scores.push_back(0.0f);
  }
  float score = 0.0f;
  for (const auto& e : extra) {
    v.tokens.push_back(e);
    v.scores.push_back(score);
    score -= 1.0f;
  }
  return v;
}

inline bool SameWeights(const ModelWeights& a, const ModelWeights& b) {
  const ModelConfig &x = a.config, &y = b.config;
  if (x.dim != y.dim || x.hidden_dim != y.hidden_dim || x.n_layers != y.n_layers ||
      x.n_heads != y.n_heads || x.n_kv_heads != y.n_kv_heads || x.vocab_size != y.vocab_size ||
      x.seq_len != y.seq_len || x.shared_classifier != y.shared_classifier) {
    return false;
  }
  if (a.token_embedding != b.token_embedding || a.rms_final != b.rms_final || a.wcls != b.wcls ||
      a.layers.size() != b.layers.size()) {
    return false;
  }
  for (std::size_t l = 0; l < a.layers.size(); ++l) {
    const LayerWeights &p = a.layers[l], &q = b.layers[l];
    if (p.rms_att != q.rms_att || p.wq != q.wq || p.wk != q.wk || p.wv != q.wv || p.wo != q.wo ||
        p.rms_ffn != q.rms_ffn || p.w1 != q.w1 || p.w2 != q.w2 || p.w3 != q.w3) {
      return false;
    }
  }
  return true;
}

}  // namespace mpcache::model::testing
