// Synthetic checkpoints: grammar and validation, deterministic bytes, loadable by the
// llama2.c loader with the right configuration and the same values as in memory.
#include "model/synth.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "model/checkpoint.h"
#include "model/compact_model.h"
#include "model/gguf.h"

namespace mpcache::model {
namespace {

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("mpcache_synth_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

std::vector<char> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(SynthDims, SevenB) {
  auto c = ParseDims("7b");
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  EXPECT_EQ(c->dim, 4096);
  EXPECT_EQ(c->hidden_dim, 11008);
  EXPECT_EQ(c->n_layers, 32);
  EXPECT_EQ(c->n_heads, 32);
  EXPECT_EQ(c->n_kv_heads, 32);
  EXPECT_EQ(c->vocab_size, 32000);
  EXPECT_EQ(c->seq_len, 4096);
  EXPECT_TRUE(ParseDims("7B").ok());
}

TEST(SynthDims, FieldsAndDefaults) {
  auto c = ParseDims("288x6x6");
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  EXPECT_EQ(c->dim, 288);
  EXPECT_EQ(c->n_layers, 6);
  EXPECT_EQ(c->n_heads, 6);
  EXPECT_EQ(c->n_kv_heads, 6);
  EXPECT_EQ(c->hidden_dim, 768);  // 256 * ceil(768 / 256)
  EXPECT_EQ(c->vocab_size, 32000);
  EXPECT_EQ(c->seq_len, 4096);
  EXPECT_EQ(LlamaHiddenDim(4096), 11008);
  auto full = ParseDims("64x5x8x4x172x512x512");
  ASSERT_TRUE(full.ok()) << full.error().ToString();
  EXPECT_EQ(full->n_kv_heads, 4);
  EXPECT_EQ(full->hidden_dim, 172);
  EXPECT_EQ(full->vocab_size, 512);
  EXPECT_EQ(full->seq_len, 512);
}

void ExpectBad(const std::string& dims, const std::string& needle) {
  auto c = ParseDims(dims);
  ASSERT_FALSE(c.ok()) << dims;
  EXPECT_EQ(c.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(c.error().message().find(needle), std::string::npos)
      << dims << ": " << c.error().message();
}

TEST(SynthDims, BadDimsHaveClearErrors) {
  ExpectBad("", "field");
  ExpectBad("13b", "field");
  ExpectBad("64x5", "3 to 7 fields");
  ExpectBad("64x5x8x4x172x512x512x9", "3 to 7 fields");
  ExpectBad("64xax8", "LAYERS must be a positive integer");
  ExpectBad("64x-1x8", "LAYERS must be a positive integer");
  ExpectBad("64x0x8", "layers must be in [1, 256]");
  ExpectBad("65x2x8", "not divisible by heads");
  ExpectBad("64x2x8x3", "not divisible by kv heads");
  ExpectBad("72x2x8", "must be even");
  ExpectBad("32768x2x8", "dim must be in");
  ExpectBad("64x2x8x8x172x0", "vocab must be in");
  ModelConfig c = *ParseDims("64x4x8");
  EXPECT_FALSE(CutLayers(c, 5).ok());
  EXPECT_FALSE(CutLayers(c, 0).ok());
  EXPECT_TRUE(CutLayers(c, 2).ok());
  EXPECT_EQ(c.n_layers, 2);
}

class SynthFile : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const auto& p : paths_) std::remove(p.c_str());
  }
  std::string Write(const ModelConfig& c, std::uint64_t seed, const std::string& name) {
    const std::string path = TempPath(name);
    paths_.push_back(path);
    SynthOptions o;
    o.seed = seed;
    auto bytes = WriteSyntheticCheckpoint(c, path, o);
    EXPECT_TRUE(bytes.ok()) << bytes.error().ToString();
    if (bytes.ok()) {
      EXPECT_EQ(*bytes, Llama2cLegacyFileSize(c));
      EXPECT_EQ(std::filesystem::file_size(path), Llama2cLegacyFileSize(c));
    }
    return path;
  }
  std::vector<std::string> paths_;
};

TEST_F(SynthFile, LoadsBackWithTheRightConfigAndValues) {
  for (bool shared : {true, false}) {
    ModelConfig c = *ParseDims("64x3x8x4x172x300x128");
    c.shared_classifier = shared;
    const auto path = Write(c, 11, shared ? "shared.bin" : "separate.bin");
    auto loaded = LoadLlama2c(path);
    ASSERT_TRUE(loaded.ok()) << loaded.error().ToString();
    const ModelConfig& lc = loaded->config;
    EXPECT_EQ(lc.dim, 64);
    EXPECT_EQ(lc.hidden_dim, 172);
    EXPECT_EQ(lc.n_layers, 3);
    EXPECT_EQ(lc.n_heads, 8);
    EXPECT_EQ(lc.n_kv_heads, 4);
    EXPECT_EQ(lc.vocab_size, 300);
    EXPECT_EQ(lc.seq_len, 128);
    EXPECT_EQ(lc.shared_classifier, shared);
    auto mem = MakeSyntheticWeights(c, 11);
    ASSERT_TRUE(mem.ok());
    EXPECT_EQ(loaded->token_embedding, mem->token_embedding);
    EXPECT_EQ(loaded->layers[2].w2, mem->layers[2].w2);
    EXPECT_EQ(loaded->layers[1].rms_ffn, mem->layers[1].rms_ffn);
    EXPECT_EQ(loaded->rms_final, mem->rms_final);
    EXPECT_EQ(loaded->wcls, mem->wcls);
    EXPECT_EQ(loaded->wcls.empty(), shared);
  }
}

TEST_F(SynthFile, DeterministicPerSeedAndLayerCutIsAPrefix) {
  ModelConfig c = *ParseDims("32x2x4x2x96x100x64");
  const auto a = ReadAll(Write(c, 5, "a.bin"));
  const auto b = ReadAll(Write(c, 5, "b.bin"));
  const auto other = ReadAll(Write(c, 6, "c.bin"));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, other);
  auto full = MakeSyntheticWeights(*ParseDims("32x4x4x2x96x100x64"), 5);
  auto cut = MakeSyntheticWeights(c, 5);
  ASSERT_TRUE(full.ok() && cut.ok());
  EXPECT_EQ(full->layers[1].wq, cut->layers[1].wq);
  EXPECT_EQ(full->token_embedding, cut->token_embedding);
}

TEST(SynthWeights, ScalesAreAsDocumented) {
  auto w = MakeSyntheticWeights(*ParseDims("256x1x4x4x768x1000x16"), 3);
  ASSERT_TRUE(w.ok());
  const auto stats = [](const std::vector<float>& v) {
    double s = 0, s2 = 0;
    for (float x : v) {
      s += x;
      s2 += static_cast<double>(x) * x;
    }
    const double mean = s / v.size();
    return std::pair<double, double>{mean, std::sqrt(s2 / v.size() - mean * mean)};
  };
  EXPECT_NEAR(stats(w->token_embedding).second, 2.0 / 16, 0.005);
  EXPECT_NEAR(stats(w->layers[0].wq).second, 1.5 / 16, 0.003);
  EXPECT_NEAR(stats(w->layers[0].wv).second, 0.6 / 16, 0.002);
  EXPECT_NEAR(stats(w->layers[0].w2).second, 1.5 / std::sqrt(768.0), 0.003);
  EXPECT_NEAR(stats(w->layers[0].rms_att).first, 1.0, 0.05);
  EXPECT_NEAR(stats(w->rms_final).first, 1.8, 0.1);
  EXPECT_NEAR(stats(w->layers[0].w1).first, 0.0, 0.002);
}

TEST(SynthFileErrors, UnwritablePath) {
  ModelConfig c = *ParseDims("32x1x4x4x64x50x16");
  auto r = WriteSyntheticCheckpoint(c, "/nonexistent-dir/x.bin");
  EXPECT_FALSE(r.ok());
}

// The streamed GGUF is byte for byte the in-memory weights through the GGUF writer (Q8_0
// blocks quantised chunk by chunk equal whole tensors quantised at once), loads through the
// normal GGUF path and opens compact with the same configuration.
TEST(SynthGguf, StreamedFileEqualsTheWriterOnTheSameWeights) {
  for (GgmlType type : {GgmlType::kQ8_0, GgmlType::kF16, GgmlType::kF32}) {
    for (bool shared : {true, false}) {
      auto c = ParseDims("64x2x4x2x96x40x16");
      ASSERT_TRUE(c.ok());
      c->shared_classifier = shared;
      const std::string a = TempPath("stream.gguf"), b = TempPath("writer.gguf");
      SynthOptions so;
      so.seed = 3;
      auto bytes = WriteSyntheticGguf(*c, a, type, so);
      ASSERT_TRUE(bytes.ok()) << bytes.error().ToString();
      auto w = MakeSyntheticWeights(*c, 3);
      ASSERT_TRUE(w.ok());
      ASSERT_TRUE(WriteGguf(*w, nullptr, b, type).ok());
      const auto fa = ReadAll(a), fb = ReadAll(b);
      EXPECT_EQ(fa.size(), *bytes);
      EXPECT_TRUE(fa == fb) << "type " << static_cast<int>(type) << " shared " << shared;
      auto ckpt = OpenCheckpoint(a);
      ASSERT_TRUE(ckpt.ok()) << ckpt.error().ToString();
      EXPECT_EQ(ckpt->format, CheckpointFormat::kGguf);
      EXPECT_EQ(ckpt->weights.config.Describe(), c->Describe());
      EXPECT_EQ(ckpt->weights.config.shared_classifier, shared);
      auto compact = CompactModel::IsCompactCheckpoint(a);
      ASSERT_TRUE(compact.ok());
      EXPECT_EQ(*compact, type != GgmlType::kF32);
      if (*compact) {
        auto m = CompactModel::Open(a);
        ASSERT_TRUE(m.ok()) << m.error().ToString();
        EXPECT_EQ((*m)->config.Describe(), c->Describe());
        EXPECT_EQ((*m)->weight_type, type == GgmlType::kQ8_0 ? "Q8_0" : "F16");
        // The compact integers are the loader's float values x 2^24, exactly.
        const LayerWeights& l1 = ckpt->weights.layers[1];
        const CompactMatrix& w2 = (*m)->layers[1].w2;
        for (std::size_t i = 0; i < w2.rows; i += 7) {
          for (std::size_t j = 0; j < w2.cols; j += 5) {
            ASSERT_EQ(static_cast<double>(w2.At(i, j)),
                      static_cast<double>(l1.w2[i * w2.cols + j]) * 16777216.0);
          }
        }
      } else {
        auto m = CompactModel::Open(a);
        ASSERT_FALSE(m.ok());
        EXPECT_EQ(m.error().code(), ErrorCode::kUnsupported);
        EXPECT_NE(m.error().message().find("F32"), std::string::npos) << m.error().ToString();
      }
      std::remove(a.c_str());
      std::remove(b.c_str());
    }
  }
}

TEST(SynthGguf, Q8NeedsRowsOfWholeBlocks) {
  auto c = ParseDims("64x5x8x4x172x512x512");
  ASSERT_TRUE(c.ok());
  const std::string a = TempPath("bad.gguf");
  auto bytes = WriteSyntheticGguf(*c, a, GgmlType::kQ8_0);
  ASSERT_FALSE(bytes.ok());
  EXPECT_NE(bytes.error().message().find("multiples of 32"), std::string::npos)
      << bytes.error().ToString();
  std::remove(a.c_str());
}

// A corrupt scale (an f16 infinity) is refused naming the tensor, row and block.
TEST(SynthGguf, InfiniteScaleRefused) {
  auto c = ParseDims("64x1x4x2x96x40x16");
  ASSERT_TRUE(c.ok());
  const std::string a = TempPath("inf.gguf");
  ASSERT_TRUE(WriteSyntheticGguf(*c, a, GgmlType::kQ8_0).ok());
  auto m = CompactModel::Open(a);
  ASSERT_TRUE(m.ok());
  // token_embd is the first tensor: the scale's offset in the data section, and the data
  // section starts after the preamble (file size minus every padded tensor).
  const CompactMatrix& wo = (*m)->layers[0].wo;
  const auto in_data =
      static_cast<std::size_t>(wo.row(3) + 1 * kQ8BlockBytes - (*m)->embedding.data);
  std::uint64_t tensor_bytes = 0;
  for (const GgufTensorPlan& t : LlamaGgufTensors(*c, GgmlType::kQ8_0)) {
    tensor_bytes += (t.bytes() + 31) / 32 * 32;
  }
  m = Result<std::shared_ptr<const CompactModel>>(InvalidArgument("closed"));  // unmapped
  std::vector<char> bytes = ReadAll(a);
  const std::size_t at = bytes.size() - tensor_bytes + in_data;
  bytes[at] = 0x00;
  bytes[at + 1] = 0x7C;  // +inf
  {
    std::ofstream out(a, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  auto bad = CompactModel::Open(a);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), ErrorCode::kCorruptData);
  EXPECT_NE(bad.error().message().find("blk.0.attn_output.weight"), std::string::npos)
      << bad.error().ToString();
  EXPECT_NE(bad.error().message().find("row 3, block 1"), std::string::npos)
      << bad.error().ToString();
  std::remove(a.c_str());
}

}  // namespace
}  // namespace mpcache::model
