#include "model/checkpoint.h"

#include <cmath>
#include <cstring>

#include "model/checkpoint_internal.h"
#include "model/gguf.h"

namespace mpcache::model {

namespace internal {

void ResizeLayers(ModelWeights& w) {
  w.layers.resize(static_cast<std::size_t>(w.config.n_layers));
}

std::vector<TensorRef> NormTensors(ModelWeights& w) {
  const std::uint64_t d = w.config.dim;
  std::vector<TensorRef> out;
  for (std::size_t l = 0; l < w.layers.size(); ++l) {
    out.push_back({&w.layers[l].rms_att, d, "layers." + std::to_string(l) + ".rms_att"});
  }
  for (std::size_t l = 0; l < w.layers.size(); ++l) {
    out.push_back({&w.layers[l].rms_ffn, d, "layers." + std::to_string(l) + ".rms_ffn"});
  }
  out.push_back({&w.rms_final, d, "rms_final"});
  return out;
}

std::vector<TensorRef> MatrixTensors(ModelWeights& w, bool include_classifier) {
  const std::uint64_t d = w.config.dim, h = w.config.hidden_dim, v = w.config.vocab_size,
                      kv = static_cast<std::uint64_t>(w.config.kv_dim());
  std::vector<TensorRef> out;
  out.push_back({&w.token_embedding, v * d, "token_embedding"});
  auto per_layer = [&](std::vector<float> LayerWeights::*member, std::uint64_t count,
                       const char* name) {
    for (std::size_t l = 0; l < w.layers.size(); ++l) {
      out.push_back({&(w.layers[l].*member), count, "layers." + std::to_string(l) + "." + name});
    }
  };
  per_layer(&LayerWeights::wq, d * d, "wq");
  per_layer(&LayerWeights::wk, kv * d, "wk");
  per_layer(&LayerWeights::wv, kv * d, "wv");
  per_layer(&LayerWeights::wo, d * d, "wo");
  per_layer(&LayerWeights::w1, h * d, "w1");
  per_layer(&LayerWeights::w2, d * h, "w2");
  per_layer(&LayerWeights::w3, h * d, "w3");
  if (include_classifier) out.push_back({&w.wcls, v * d, "wcls"});
  return out;
}

bool TotalCount(const std::vector<TensorRef>& tensors, std::uint64_t* total) {
  std::uint64_t sum = 0;
  for (const TensorRef& t : tensors) {
    if (__builtin_add_overflow(sum, t.count, &sum)) return false;
  }
  *total = sum;
  return true;
}

Status ValidateHeaderConfig(const ModelConfig& config, const std::string& path) {
  Status s = config.Validate();
  if (!s.ok()) {
    return CorruptData(path + ": header describes an impossible model: " + s.error().message());
  }
  return Status::Ok();
}

}  // namespace internal

namespace {

constexpr std::uint64_t kLegacyHeaderBytes = 7 * sizeof(std::int32_t);

Result<Checkpoint> LoadLegacy(FileReader& reader) {
  const std::string& path = reader.path();
  std::int32_t h[7];
  if (reader.size() < kLegacyHeaderBytes) {
    return CorruptData(path + ": file is truncated: " + std::to_string(reader.size()) +
                       " bytes, a llama2.c checkpoint header alone needs 28");
  }
  MPCACHE_RETURN_IF_ERROR(reader.Read(h, sizeof(h), "llama2.c header"));
  Checkpoint ckpt;
  ckpt.format = CheckpointFormat::kLlama2cLegacy;
  ckpt.weight_type = "F32";
  ckpt.file_size = reader.size();
  ModelConfig& c = ckpt.weights.config;
  c.dim = h[0];
  c.hidden_dim = h[1];
  c.n_layers = h[2];
  c.n_heads = h[3];
  c.n_kv_heads = h[4];
  c.vocab_size = h[5] == INT32_MIN ? 0 : std::abs(h[5]);
  c.seq_len = h[6];
  c.shared_classifier = h[5] > 0;
  if (Status valid = c.Validate(); !valid.ok()) {
    return CorruptData(path +
                       ": not a model checkpoint: no GGUF or ak42 magic, and read as a llama2.c "
                       "legacy header it describes an impossible model (" +
                       valid.error().message() + ")");
  }
  internal::ResizeLayers(ckpt.weights);

  // Expected layout: embedding, rms_att*, wq*, wk*, wv*, wo*, rms_ffn*, w1*, w2*, w3*,
  // rms_final, freq_cis_real, freq_cis_imag, [wcls].
  ModelWeights& w = ckpt.weights;
  auto mats = internal::MatrixTensors(w, false);
  auto norms = internal::NormTensors(w);
  std::uint64_t total = 0, norm_total = 0;
  internal::TotalCount(mats, &total);
  internal::TotalCount(norms, &norm_total);
  const std::uint64_t freq =
      static_cast<std::uint64_t>(c.seq_len) * static_cast<std::uint64_t>(c.head_size());
  total += norm_total + freq +
           (c.shared_classifier ? 0 : static_cast<std::uint64_t>(c.vocab_size) * c.dim);
  const std::uint64_t expected = kLegacyHeaderBytes + total * sizeof(float);
  if (reader.size() != expected) {
    return CorruptData(
        path + ": size mismatch: the llama2.c header (" + c.Describe() + ") implies " +
        std::to_string(expected) + " bytes, the file has " + std::to_string(reader.size()) +
        (reader.size() < expected ? " (truncated?)" : " (not a llama2.c legacy file?)"));
  }
  const std::size_t L = w.layers.size();
  auto read = [&](std::vector<float>& t, std::uint64_t n, const std::string& name) {
    return reader.ReadFloats(t, n, name);
  };
  const std::uint64_t d = c.dim, hd = c.hidden_dim, kv = c.kv_dim(), v = c.vocab_size;
  MPCACHE_RETURN_IF_ERROR(read(w.token_embedding, v * d, "token_embedding"));
  for (std::size_t l = 0; l < L; ++l)
    MPCACHE_RETURN_IF_ERROR(read(w.layers[l].rms_att, d, "rms_att"));
  for (std::size_t l = 0; l < L; ++l) MPCACHE_RETURN_IF_ERROR(read(w.layers[l].wq, d * d, "wq"));
  for (std::size_t l = 0; l < L; ++l) MPCACHE_RETURN_IF_ERROR(read(w.layers[l].wk, kv * d, "wk"));
  for (std::size_t l = 0; l < L; ++l) MPCACHE_RETURN_IF_ERROR(read(w.layers[l].wv, kv * d, "wv"));
  for (std::size_t l = 0; l < L; ++l) MPCACHE_RETURN_IF_ERROR(read(w.layers[l].wo, d * d, "wo"));
  for (std::size_t l = 0; l < L; ++l)
    MPCACHE_RETURN_IF_ERROR(read(w.layers[l].rms_ffn, d, "rms_ffn"));
  for (std::size_t l = 0; l < L; ++l) MPCACHE_RETURN_IF_ERROR(read(w.layers[l].w1, hd * d, "w1"));
  for (std::size_t l = 0; l < L; ++l) MPCACHE_RETURN_IF_ERROR(read(w.layers[l].w2, d * hd, "w2"));
  for (std::size_t l = 0; l < L; ++l) MPCACHE_RETURN_IF_ERROR(read(w.layers[l].w3, hd * d, "w3"));
  MPCACHE_RETURN_IF_ERROR(read(w.rms_final, d, "rms_final"));
  MPCACHE_RETURN_IF_ERROR(reader.Seek(reader.position() + freq * sizeof(float)));  // freq_cis
  if (!c.shared_classifier) MPCACHE_RETURN_IF_ERROR(read(w.wcls, v * d, "wcls"));
  return ckpt;
}

Result<FileReader> OpenAndDetect(const std::string& path, CheckpointFormat* format) {
  MPCACHE_ASSIGN_OR_RETURN(FileReader reader, FileReader::Open(path));
  std::uint32_t magic = 0;
  if (reader.size() < sizeof(magic)) {
    return CorruptData(path + ": file is truncated: only " + std::to_string(reader.size()) +
                       " bytes, not a model checkpoint");
  }
  MPCACHE_RETURN_IF_ERROR(reader.Read(&magic, sizeof(magic), "magic"));
  MPCACHE_RETURN_IF_ERROR(reader.Seek(0));
  if (magic == kGgufMagic) {
    *format = CheckpointFormat::kGguf;
  } else if (magic == kLlama2cMagic) {
    *format = CheckpointFormat::kLlama2cVersioned;
  } else {
    *format = CheckpointFormat::kLlama2cLegacy;  // no magic; the header check decides
  }
  return reader;
}

}  // namespace

std::string_view FormatName(CheckpointFormat format) {
  switch (format) {
    case CheckpointFormat::kLlama2cLegacy:
      return "llama2.c legacy";
    case CheckpointFormat::kLlama2cVersioned:
      return "llama2.c ak42";
    case CheckpointFormat::kGguf:
      return "GGUF";
  }
  return "unknown";
}

Result<CheckpointFormat> DetectCheckpointFormat(const std::string& path) {
  CheckpointFormat format{};
  MPCACHE_ASSIGN_OR_RETURN(FileReader reader, OpenAndDetect(path, &format));
  (void)reader;
  return format;
}

Result<Checkpoint> OpenCheckpoint(const std::string& path) {
  CheckpointFormat format{};
  MPCACHE_ASSIGN_OR_RETURN(FileReader reader, OpenAndDetect(path, &format));
  switch (format) {
    case CheckpointFormat::kGguf:
      return LoadGgufCheckpoint(reader);
    case CheckpointFormat::kLlama2cVersioned:
      return internal::LoadVersioned(reader);
    case CheckpointFormat::kLlama2cLegacy:
      break;
  }
  return LoadLegacy(reader);
}

Result<ModelWeights> LoadCheckpoint(const std::string& path) {
  MPCACHE_ASSIGN_OR_RETURN(Checkpoint ckpt, OpenCheckpoint(path));
  return std::move(ckpt.weights);
}

Result<ModelWeights> LoadLlama2c(const std::string& path) {
  CheckpointFormat format{};
  MPCACHE_ASSIGN_OR_RETURN(FileReader reader, OpenAndDetect(path, &format));
  if (format == CheckpointFormat::kGguf) {
    return InvalidArgument(path + ": this is a GGUF file, not a llama2.c checkpoint");
  }
  Result<Checkpoint> ckpt = format == CheckpointFormat::kLlama2cVersioned
                                ? internal::LoadVersioned(reader)
                                : LoadLegacy(reader);
  if (!ckpt.ok()) return ckpt.error();
  return std::move(ckpt.value().weights);
}

Status WriteLlama2c(const ModelWeights& weights, const std::string& path) {
  MPCACHE_RETURN_IF_ERROR(weights.CheckShapes());
  const ModelConfig& c = weights.config;
  MPCACHE_ASSIGN_OR_RETURN(FileWriter out, FileWriter::Create(path));
  const std::int32_t header[7] = {c.dim,        c.hidden_dim,
                                  c.n_layers,   c.n_heads,
                                  c.n_kv_heads, c.shared_classifier ? c.vocab_size : -c.vocab_size,
                                  c.seq_len};
  MPCACHE_RETURN_IF_ERROR(out.Write(header, sizeof(header)));
  MPCACHE_RETURN_IF_ERROR(out.WriteFloats(weights.token_embedding));
  const auto& L = weights.layers;
  for (const auto& l : L) MPCACHE_RETURN_IF_ERROR(out.WriteFloats(l.rms_att));
  for (const auto& l : L) MPCACHE_RETURN_IF_ERROR(out.WriteFloats(l.wq));
  for (const auto& l : L) MPCACHE_RETURN_IF_ERROR(out.WriteFloats(l.wk));
  for (const auto& l : L) MPCACHE_RETURN_IF_ERROR(out.WriteFloats(l.wv));
  for (const auto& l : L) MPCACHE_RETURN_IF_ERROR(out.WriteFloats(l.wo));
  for (const auto& l : L) MPCACHE_RETURN_IF_ERROR(out.WriteFloats(l.rms_ffn));
  for (const auto& l : L) MPCACHE_RETURN_IF_ERROR(out.WriteFloats(l.w1));
  for (const auto& l : L) MPCACHE_RETURN_IF_ERROR(out.WriteFloats(l.w2));
  for (const auto& l : L) MPCACHE_RETURN_IF_ERROR(out.WriteFloats(l.w3));
  MPCACHE_RETURN_IF_ERROR(out.WriteFloats(weights.rms_final));
  // freq_cis_real then freq_cis_imag, (seq_len, head_size/2) each, as llama2.c's export.
  const int half = c.head_size() / 2;
  std::vector<float> row(static_cast<std::size_t>(half));
  for (int part = 0; part < 2; ++part) {
    for (int pos = 0; pos < c.seq_len; ++pos) {
      for (int i = 0; i < half; ++i) {
        const double freq = 1.0 / std::pow(static_cast<double>(c.rope_theta),
                                           (2.0 * i) / static_cast<double>(c.head_size()));
        const double angle = pos * freq;
        row[static_cast<std::size_t>(i)] =
            static_cast<float>(part == 0 ? std::cos(angle) : std::sin(angle));
      }
      MPCACHE_RETURN_IF_ERROR(out.WriteFloats(row));
    }
  }
  if (!c.shared_classifier) MPCACHE_RETURN_IF_ERROR(out.WriteFloats(weights.wcls));
  return out.Close();
}

}  // namespace mpcache::model
