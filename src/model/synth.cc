#include "model/synth.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <numbers>
#include <span>
#include <string_view>
#include <vector>

#include "common/prg.h"
#include "model/file_io.h"

namespace mpcache::model {
namespace {

constexpr int kMaxDim = 16384;
constexpr int kMaxLayers = 256;
constexpr int kMaxHeads = 512;
constexpr int kMaxHidden = 131072;
constexpr int kMaxVocab = 1 << 20;
constexpr int kMaxSeq = 1 << 17;
constexpr std::size_t kChunk = std::size_t{1} << 20;  // floats generated per step

// Tensor kinds in llama2.c legacy file order (their ids seed independent PRG streams).
enum class Kind : std::uint64_t {
  kEmbedding = 1,
  kRmsAtt,
  kWq,
  kWk,
  kWv,
  kWo,
  kRmsFfn,
  kW1,
  kW2,
  kW3,
  kRmsFinal,
  kWcls,
};

struct TensorSpec {
  Kind kind;
  std::uint64_t count;  // floats per layer (or in total for non-layer tensors)
  bool per_layer;
  double mean;
  double sigma;
  bool clip;  // clip draws to 3 sigma (gains)
};

std::vector<TensorSpec> Specs(const ModelConfig& c) {
  const std::uint64_t d = c.dim, h = c.hidden_dim, v = c.vocab_size, kv = c.kv_dim();
  const double sd = 1.0 / std::sqrt(static_cast<double>(d));
  const double sh = 1.0 / std::sqrt(static_cast<double>(h));
  return {
      {Kind::kEmbedding, v * d, false, 0.0, 2.0 * sd, false},
      {Kind::kRmsAtt, d, true, 1.0, 0.2, true},
      {Kind::kWq, d * d, true, 0.0, 1.5 * sd, false},
      {Kind::kWk, kv * d, true, 0.0, 1.5 * sd, false},
      {Kind::kWv, kv * d, true, 0.0, 0.6 * sd, false},
      {Kind::kWo, d * d, true, 0.0, 0.6 * sd, false},
      {Kind::kRmsFfn, d, true, 0.85, 0.2, true},
      {Kind::kW1, h * d, true, 0.0, sd, false},
      {Kind::kW2, d * h, true, 0.0, 1.5 * sh, false},
      {Kind::kW3, h * d, true, 0.0, sd, false},
      {Kind::kRmsFinal, d, false, 1.8, 0.5, true},
  };
}

TensorSpec WclsSpec(const ModelConfig& c) {
  return {Kind::kWcls, static_cast<std::uint64_t>(c.vocab_size) * c.dim, false,
          0.0,         2.0 / std::sqrt(static_cast<double>(c.dim)),      false};
}

// Streams `count` draws of mean + sigma * N(0,1) from the tensor's own PRG stream to `sink`.
template <typename Sink>
Status Generate(const Seed& master, const TensorSpec& spec, int layer, std::uint64_t count,
                Sink&& sink) {
  const auto id = (static_cast<std::uint64_t>(spec.kind) << 32) | static_cast<std::uint64_t>(layer);
  Prg prg(DeriveSeed(master, id));
  std::vector<std::uint64_t> raw(kChunk);
  std::vector<float> out(kChunk);
  constexpr double kTwoPi = 2.0 * std::numbers::pi;
  for (std::uint64_t done = 0; done < count;) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, count - done));
    const std::size_t pairs = (n + 1) / 2;
    prg.FillValues(std::span<std::uint64_t>(raw.data(), 2 * pairs));
    for (std::size_t i = 0; i < pairs; ++i) {
      // Box-Muller: u1 in (0, 1], u2 in [0, 1).
      const double u1 = (static_cast<double>(raw[2 * i] >> 11) + 1.0) * 0x1.0p-53;
      const double u2 = static_cast<double>(raw[2 * i + 1] >> 11) * 0x1.0p-53;
      const double r = std::sqrt(-2.0 * std::log(u1));
      double z[2] = {r * std::cos(kTwoPi * u2), r * std::sin(kTwoPi * u2)};
      for (int k = 0; k < 2 && 2 * i + k < n; ++k) {
        double g = z[k];
        if (spec.clip) g = std::clamp(g, -3.0, 3.0);
        out[2 * i + k] = static_cast<float>(spec.mean + spec.sigma * g);
      }
    }
    MPCACHE_RETURN_IF_ERROR(sink(std::span<const float>(out.data(), n)));
    done += n;
  }
  return Status::Ok();
}

Seed MasterSeed(std::uint64_t seed) {
  return DeriveSeed(TestSeed(seed), 0x73796e7468ULL);
}

// RoPE tables as llama2.c's export writes them: cos/sin(pos * theta^(-2i/head_size)).
std::vector<float> FreqCis(const ModelConfig& c, bool imag) {
  const int hs = c.head_size();
  std::vector<float> out;
  out.reserve(static_cast<std::size_t>(c.seq_len) * hs / 2);
  for (int pos = 0; pos < c.seq_len; ++pos) {
    for (int i = 0; i < hs / 2; ++i) {
      const float freq = 1.0f / std::pow(c.rope_theta, static_cast<float>(2 * i) / hs);
      const float angle = static_cast<float>(pos) * freq;
      out.push_back(imag ? std::sin(angle) : std::cos(angle));
    }
  }
  return out;
}

Result<int> ParseField(std::string_view text, std::string_view name, const std::string& whole) {
  if (text.empty() || text.size() > 9 ||
      !std::all_of(text.begin(), text.end(), [](char ch) { return std::isdigit(ch) != 0; })) {
    return InvalidArgument("--dims '" + whole + "': " + std::string(name) +
                           " must be a positive integer, got '" + std::string(text) +
                           "' (expected 7b or DIMxLAYERSxHEADS[xKV_HEADS[xHIDDEN[xVOCAB[xSEQ]]]])");
  }
  return std::stoi(std::string(text));
}

}  // namespace

int LlamaHiddenDim(int dim) {
  constexpr int kMultipleOf = 256;
  const int hidden = 2 * (4 * dim) / 3;
  return kMultipleOf * ((hidden + kMultipleOf - 1) / kMultipleOf);
}

Result<ModelConfig> ParseDims(const std::string& dims) {
  std::string lower;
  for (char ch : dims)
    lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
  ModelConfig c;
  if (lower == "7b") {
    c.dim = 4096;
    c.hidden_dim = 11008;
    c.n_layers = 32;
    c.n_heads = 32;
    c.n_kv_heads = 32;
    c.vocab_size = 32000;
    c.seq_len = 4096;
    MPCACHE_RETURN_IF_ERROR(ValidateSynthConfig(c));
    return c;
  }
  std::vector<std::string_view> fields;
  std::string_view rest(lower);
  while (true) {
    const auto x = rest.find('x');
    fields.push_back(rest.substr(0, x));
    if (x == std::string_view::npos) break;
    rest.remove_prefix(x + 1);
  }
  if (fields.size() < 3 || fields.size() > 7) {
    return InvalidArgument("--dims '" + dims +
                           "': expected 7b or DIMxLAYERSxHEADS[xKV_HEADS[xHIDDEN[xVOCAB[xSEQ]]]] "
                           "(3 to 7 fields), got " +
                           std::to_string(fields.size()) + " field(s)");
  }
  static constexpr std::array<std::string_view, 7> kNames = {
      "DIM", "LAYERS", "HEADS", "KV_HEADS", "HIDDEN", "VOCAB", "SEQ"};
  std::array<int, 7> v{};
  for (std::size_t i = 0; i < fields.size(); ++i) {
    MPCACHE_ASSIGN_OR_RETURN(v[i], ParseField(fields[i], kNames[i], dims));
  }
  c.dim = v[0];
  c.n_layers = v[1];
  c.n_heads = v[2];
  c.n_kv_heads = fields.size() > 3 ? v[3] : c.n_heads;
  c.hidden_dim = fields.size() > 4 ? v[4] : LlamaHiddenDim(c.dim);
  c.vocab_size = fields.size() > 5 ? v[5] : 32000;
  c.seq_len = fields.size() > 6 ? v[6] : 4096;
  if (auto st = ValidateSynthConfig(c); !st.ok()) {
    return st.error().WithContext("--dims '" + dims + "'");
  }
  return c;
}

Status ValidateSynthConfig(const ModelConfig& c) {
  const auto check = [](int value, int max, std::string_view name) -> Status {
    if (value < 1 || value > max) {
      return InvalidArgument(std::string(name) + " must be in [1, " + std::to_string(max) +
                             "], got " + std::to_string(value));
    }
    return Status::Ok();
  };
  MPCACHE_RETURN_IF_ERROR(check(c.dim, kMaxDim, "dim"));
  MPCACHE_RETURN_IF_ERROR(check(c.n_layers, kMaxLayers, "layers"));
  MPCACHE_RETURN_IF_ERROR(check(c.n_heads, kMaxHeads, "heads"));
  MPCACHE_RETURN_IF_ERROR(check(c.n_kv_heads, kMaxHeads, "kv heads"));
  MPCACHE_RETURN_IF_ERROR(check(c.hidden_dim, kMaxHidden, "hidden"));
  MPCACHE_RETURN_IF_ERROR(check(c.vocab_size, kMaxVocab, "vocab"));
  MPCACHE_RETURN_IF_ERROR(check(c.seq_len, kMaxSeq, "seq"));
  if (c.dim % c.n_heads != 0) {
    return InvalidArgument("dim " + std::to_string(c.dim) + " is not divisible by heads " +
                           std::to_string(c.n_heads));
  }
  if (c.n_heads % c.n_kv_heads != 0) {
    return InvalidArgument("heads " + std::to_string(c.n_heads) + " is not divisible by kv heads " +
                           std::to_string(c.n_kv_heads));
  }
  if (c.head_size() % 2 != 0) {
    return InvalidArgument("head size dim/heads = " + std::to_string(c.head_size()) +
                           " must be even (RoPE rotates pairs)");
  }
  return Status::Ok();
}

Status CutLayers(ModelConfig& config, int layers) {
  if (layers < 1 || layers > config.n_layers) {
    return InvalidArgument("--layers must be in [1, " + std::to_string(config.n_layers) +
                           "], got " + std::to_string(layers));
  }
  config.n_layers = layers;
  return Status::Ok();
}

std::uint64_t Llama2cLegacyFileSize(const ModelConfig& c) {
  std::uint64_t floats = 0;
  for (const auto& s : Specs(c)) floats += s.count * (s.per_layer ? c.n_layers : 1);
  floats += static_cast<std::uint64_t>(c.seq_len) * c.head_size();  // freq_cis real + imag
  if (!c.shared_classifier) floats += static_cast<std::uint64_t>(c.vocab_size) * c.dim;
  return 7 * sizeof(std::int32_t) + floats * sizeof(float);
}

Result<std::uint64_t> WriteSyntheticCheckpoint(const ModelConfig& config, const std::string& path,
                                               const SynthOptions& options) {
  MPCACHE_RETURN_IF_ERROR(ValidateSynthConfig(config));
  const std::uint64_t total = Llama2cLegacyFileSize(config);
  MPCACHE_ASSIGN_OR_RETURN(auto writer, FileWriter::Create(path));
  const std::int32_t header[7] = {
      config.dim,        config.hidden_dim,
      config.n_layers,   config.n_heads,
      config.n_kv_heads, config.shared_classifier ? config.vocab_size : -config.vocab_size,
      config.seq_len};
  MPCACHE_RETURN_IF_ERROR(writer.Write(header, sizeof(header)));
  std::uint64_t written = sizeof(header);
  const auto sink = [&](std::span<const float> values) -> Status {
    MPCACHE_RETURN_IF_ERROR(writer.WriteFloats(values));
    written += values.size_bytes();
    if (options.progress) options.progress(written, total);
    return Status::Ok();
  };
  const Seed master = MasterSeed(options.seed);
  for (const auto& spec : Specs(config)) {
    const int layers = spec.per_layer ? config.n_layers : 1;
    for (int l = 0; l < layers; ++l) {
      MPCACHE_RETURN_IF_ERROR(Generate(master, spec, l, spec.count, sink));
    }
  }
  MPCACHE_RETURN_IF_ERROR(sink(FreqCis(config, false)));
  MPCACHE_RETURN_IF_ERROR(sink(FreqCis(config, true)));
  if (!config.shared_classifier) {
    const TensorSpec wcls = WclsSpec(config);
    MPCACHE_RETURN_IF_ERROR(Generate(master, wcls, 0, wcls.count, sink));
  }
  MPCACHE_RETURN_IF_ERROR(writer.Close());
  if (written != total) {
    return Internal("synthetic checkpoint: wrote " + std::to_string(written) + " bytes, expected " +
                    std::to_string(total));
  }
  return written;
}

Result<std::uint64_t> WriteSyntheticGguf(const ModelConfig& config, const std::string& path,
                                         GgmlType matrix_type, const SynthOptions& options) {
  MPCACHE_RETURN_IF_ERROR(ValidateSynthConfig(config));
  const std::vector<GgufTensorPlan> plan = LlamaGgufTensors(config, matrix_type);
  MPCACHE_ASSIGN_OR_RETURN(std::vector<std::uint8_t> preamble, GgufPreamble(config, nullptr, plan));
  std::uint64_t total = preamble.size();
  for (const GgufTensorPlan& t : plan) {
    total += (t.bytes() + kGgufWriteAlign - 1) / kGgufWriteAlign * kGgufWriteAlign;
  }
  // Each planned tensor's generator: its kind and layer (its own PRG stream).
  const std::vector<TensorSpec> specs = Specs(config);
  const auto spec_of = [&](Kind kind) {
    for (const TensorSpec& sp : specs) {
      if (sp.kind == kind) return sp;
    }
    return WclsSpec(config);
  };
  const auto source = [&](const std::string& name, int* layer) -> Result<TensorSpec> {
    *layer = 0;
    if (name == "token_embd.weight") return spec_of(Kind::kEmbedding);
    if (name == "output_norm.weight") return spec_of(Kind::kRmsFinal);
    if (name == "output.weight") return WclsSpec(config);
    const auto dot = name.find('.', 4);
    if (name.rfind("blk.", 0) != 0 || dot == std::string::npos) {
      return Internal("synthetic GGUF: unplanned tensor " + name);
    }
    *layer = std::stoi(name.substr(4, dot - 4));
    static const std::pair<const char*, Kind> kKinds[] = {
        {"attn_norm.weight", Kind::kRmsAtt}, {"attn_q.weight", Kind::kWq},
        {"attn_k.weight", Kind::kWk},        {"attn_v.weight", Kind::kWv},
        {"attn_output.weight", Kind::kWo},   {"ffn_norm.weight", Kind::kRmsFfn},
        {"ffn_gate.weight", Kind::kW1},      {"ffn_down.weight", Kind::kW2},
        {"ffn_up.weight", Kind::kW3}};
    const std::string suffix = name.substr(dot + 1);
    for (const auto& [n, kind] : kKinds) {
      if (suffix == n) return spec_of(kind);
    }
    return Internal("synthetic GGUF: unplanned tensor " + name);
  };
  MPCACHE_ASSIGN_OR_RETURN(auto writer, FileWriter::Create(path));
  MPCACHE_RETURN_IF_ERROR(writer.Write(preamble.data(), preamble.size()));
  std::uint64_t written = preamble.size();
  const Seed master = MasterSeed(options.seed);
  std::vector<std::uint8_t> encoded;
  const std::vector<std::uint8_t> zeros(kGgufWriteAlign, 0);
  for (const GgufTensorPlan& t : plan) {
    int layer = 0;
    MPCACHE_ASSIGN_OR_RETURN(TensorSpec spec, source(t.name, &layer));
    std::uint64_t tensor_bytes = 0;
    // Chunks of 2^20 values: whole Q8_0 blocks (rows are multiples of 32).
    MPCACHE_RETURN_IF_ERROR(
        Generate(master, spec, layer, spec.count, [&](std::span<const float> v) -> Status {
          encoded.clear();
          AppendGgufEncoded(v, t.type, encoded);
          MPCACHE_RETURN_IF_ERROR(writer.Write(encoded.data(), encoded.size()));
          tensor_bytes += encoded.size();
          written += encoded.size();
          if (options.progress) options.progress(written, total);
          return Status::Ok();
        }));
    const std::uint64_t pad = (kGgufWriteAlign - tensor_bytes % kGgufWriteAlign) % kGgufWriteAlign;
    MPCACHE_RETURN_IF_ERROR(writer.Write(zeros.data(), pad));
    written += pad;
  }
  MPCACHE_RETURN_IF_ERROR(writer.Close());
  if (written != total) {
    return Internal("synthetic GGUF: wrote " + std::to_string(written) + " bytes, expected " +
                    std::to_string(total));
  }
  return written;
}

Result<ModelWeights> MakeSyntheticWeights(const ModelConfig& config, std::uint64_t seed) {
  MPCACHE_RETURN_IF_ERROR(ValidateSynthConfig(config));
  ModelWeights w;
  w.config = config;
  w.layers.resize(config.n_layers);
  const Seed master = MasterSeed(seed);
  const auto fill = [&](const TensorSpec& spec, int layer, std::vector<float>& out) {
    out.clear();
    out.reserve(spec.count);
    return Generate(master, spec, layer, spec.count, [&](std::span<const float> v) {
      out.insert(out.end(), v.begin(), v.end());
      return Status::Ok();
    });
  };
  for (const auto& spec : Specs(config)) {
    for (int l = 0; l < (spec.per_layer ? config.n_layers : 1); ++l) {
      LayerWeights& lw = w.layers[l];
      std::vector<float>* dst = nullptr;
      switch (spec.kind) {
        case Kind::kEmbedding:
          dst = &w.token_embedding;
          break;
        case Kind::kRmsAtt:
          dst = &lw.rms_att;
          break;
        case Kind::kWq:
          dst = &lw.wq;
          break;
        case Kind::kWk:
          dst = &lw.wk;
          break;
        case Kind::kWv:
          dst = &lw.wv;
          break;
        case Kind::kWo:
          dst = &lw.wo;
          break;
        case Kind::kRmsFfn:
          dst = &lw.rms_ffn;
          break;
        case Kind::kW1:
          dst = &lw.w1;
          break;
        case Kind::kW2:
          dst = &lw.w2;
          break;
        case Kind::kW3:
          dst = &lw.w3;
          break;
        case Kind::kRmsFinal:
          dst = &w.rms_final;
          break;
        case Kind::kWcls:
          break;
      }
      if (dst != nullptr) MPCACHE_RETURN_IF_ERROR(fill(spec, l, *dst));
    }
  }
  if (!config.shared_classifier) {
    const TensorSpec wcls = WclsSpec(config);
    MPCACHE_RETURN_IF_ERROR(fill(wcls, 0, w.wcls));
  }
  return w;
}

}  // namespace mpcache::model
