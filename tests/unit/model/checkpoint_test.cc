#include "model/checkpoint.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "unit/model/test_util.h"

namespace mpcache::model {
namespace {

using testing::ReadBytes;
using testing::SameWeights;
using testing::TempDir;
using testing::TinyModel;
using testing::WriteBytes;

bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(Llama2cTest, LegacyRoundTripSharedClassifier) {
  TempDir dir;
  const ModelWeights w = TinyModel(1, true);
  ASSERT_TRUE(WriteLlama2c(w, dir.File("m.bin")).ok());
  auto loaded = LoadLlama2c(dir.File("m.bin"));
  ASSERT_TRUE(loaded.ok()) << loaded.error().ToString();
  EXPECT_TRUE(SameWeights(w, *loaded));
  auto fmt = DetectCheckpointFormat(dir.File("m.bin"));
  ASSERT_TRUE(fmt.ok());
  EXPECT_EQ(*fmt, CheckpointFormat::kLlama2cLegacy);
}

TEST(Llama2cTest, LegacyRoundTripSeparateClassifier) {
  TempDir dir;
  const ModelWeights w = TinyModel(2, false);
  ASSERT_TRUE(WriteLlama2c(w, dir.File("m.bin")).ok());
  // Negative vocab_size marks the separate classifier.
  const auto bytes = ReadBytes(dir.File("m.bin"));
  std::int32_t vocab = 0;
  std::memcpy(&vocab, bytes.data() + 20, 4);
  EXPECT_EQ(vocab, -300);
  auto loaded = LoadCheckpoint(dir.File("m.bin"));
  ASSERT_TRUE(loaded.ok()) << loaded.error().ToString();
  EXPECT_FALSE(loaded->config.shared_classifier);
  EXPECT_TRUE(SameWeights(w, *loaded));
}

TEST(Llama2cTest, VersionedV1RoundTrip) {
  TempDir dir;
  for (bool shared : {true, false}) {
    const ModelWeights w = TinyModel(3, shared);
    ASSERT_TRUE(WriteLlama2cVersioned(w, dir.File("v1.bin"), 1).ok());
    auto ckpt = OpenCheckpoint(dir.File("v1.bin"));
    ASSERT_TRUE(ckpt.ok()) << ckpt.error().ToString();
    EXPECT_EQ(ckpt->format, CheckpointFormat::kLlama2cVersioned);
    EXPECT_EQ(ckpt->version, 1);
    EXPECT_TRUE(SameWeights(w, ckpt->weights));
  }
}

TEST(Llama2cTest, VersionedV2Q8RoundTripWithinQuantisationError) {
  TempDir dir;
  const ModelWeights w = TinyModel(4, false);
  ASSERT_TRUE(WriteLlama2cVersioned(w, dir.File("v2.bin"), 2).ok());
  auto ckpt = OpenCheckpoint(dir.File("v2.bin"));
  ASSERT_TRUE(ckpt.ok()) << ckpt.error().ToString();
  EXPECT_EQ(ckpt->version, 2);
  EXPECT_EQ(ckpt->weight_type, "Q8_0");
  const ModelWeights& q = ckpt->weights;
  // Norms are stored exactly; matrices within half a quantisation step (max|w|/127/2).
  EXPECT_EQ(q.rms_final, w.rms_final);
  EXPECT_EQ(q.layers[1].rms_ffn, w.layers[1].rms_ffn);
  auto close = [](const std::vector<float>& a, const std::vector<float>& b, float amax) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (std::fabs(a[i] - b[i]) > amax / 127.0f * 0.5f + 1e-6f) return false;
    }
    return true;
  };
  EXPECT_TRUE(close(q.token_embedding, w.token_embedding, 1.0f));
  EXPECT_TRUE(close(q.layers[0].wq, w.layers[0].wq, 0.3f));
  EXPECT_TRUE(close(q.layers[1].w2, w.layers[1].w2, 0.3f));
  EXPECT_TRUE(close(q.wcls, w.wcls, 0.5f));
}

TEST(Llama2cErrorTest, MissingFile) {
  auto r = LoadCheckpoint("/nonexistent/dir/model.bin");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kNotFound);
  EXPECT_TRUE(Contains(r.error().message(), "/nonexistent/dir/model.bin"));
}

TEST(Llama2cErrorTest, TruncatedLegacy) {
  TempDir dir;
  ASSERT_TRUE(WriteLlama2c(TinyModel(), dir.File("m.bin")).ok());
  auto bytes = ReadBytes(dir.File("m.bin"));
  testing::KeepHead(bytes, bytes.size() - 100);
  WriteBytes(dir.File("cut.bin"), bytes);
  auto r = LoadCheckpoint(dir.File("cut.bin"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kCorruptData);
  EXPECT_TRUE(Contains(r.error().message(), "cut.bin")) << r.error().message();
  EXPECT_TRUE(Contains(r.error().message(), "truncated")) << r.error().message();
  testing::KeepHead(bytes, 10);  // not even a header
  WriteBytes(dir.File("tiny.bin"), bytes);
  r = LoadCheckpoint(dir.File("tiny.bin"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kCorruptData);
  WriteBytes(dir.File("empty.bin"), {});
  r = LoadCheckpoint(dir.File("empty.bin"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kCorruptData);
}

TEST(Llama2cErrorTest, SizeDisagreesWithHeader) {
  TempDir dir;
  ASSERT_TRUE(WriteLlama2c(TinyModel(), dir.File("m.bin")).ok());
  auto bytes = ReadBytes(dir.File("m.bin"));
  bytes.insert(bytes.end(), 64, 0);  // trailing junk
  WriteBytes(dir.File("long.bin"), bytes);
  auto r = LoadCheckpoint(dir.File("long.bin"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kCorruptData);
  EXPECT_TRUE(Contains(r.error().message(), "size mismatch")) << r.error().message();
  // A header whose dims disagree with the data (n_layers 2 -> 3).
  testing::KeepHead(bytes, bytes.size() - 64);
  const std::int32_t layers = 3;
  std::memcpy(bytes.data() + 8, &layers, 4);
  WriteBytes(dir.File("hdr.bin"), bytes);
  r = LoadCheckpoint(dir.File("hdr.bin"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kCorruptData);
  EXPECT_TRUE(Contains(r.error().message(), "implies")) << r.error().message();
}

TEST(Llama2cErrorTest, ImpossibleHeaderIsNotACheckpoint) {
  TempDir dir;
  const std::string text = "this is a text file, certainly not a model checkpoint\n";
  WriteBytes(dir.File("t.txt"), std::vector<std::uint8_t>(text.begin(), text.end()));
  auto r = LoadCheckpoint(dir.File("t.txt"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kCorruptData);
  EXPECT_TRUE(Contains(r.error().message(), "not a model checkpoint")) << r.error().message();
}

TEST(Llama2cErrorTest, VersionedErrors) {
  TempDir dir;
  ASSERT_TRUE(WriteLlama2cVersioned(TinyModel(), dir.File("v1.bin"), 1).ok());
  const auto good = ReadBytes(dir.File("v1.bin"));
  // Unknown version.
  auto bytes = good;
  const std::int32_t version = 7;
  std::memcpy(bytes.data() + 4, &version, 4);
  WriteBytes(dir.File("v7.bin"), bytes);
  auto r = LoadCheckpoint(dir.File("v7.bin"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kUnsupported);
  EXPECT_TRUE(Contains(r.error().message(), "version 7")) << r.error().message();
  // Truncated data.
  bytes = good;
  testing::KeepHead(bytes, bytes.size() - 4);
  WriteBytes(dir.File("cut.bin"), bytes);
  r = LoadCheckpoint(dir.File("cut.bin"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kCorruptData);
  EXPECT_TRUE(Contains(r.error().message(), "truncated")) << r.error().message();
  // Truncated inside the 256-byte header.
  testing::KeepHead(bytes, 100);
  WriteBytes(dir.File("hdr.bin"), bytes);
  r = LoadCheckpoint(dir.File("hdr.bin"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kCorruptData);
  // Bad shared-classifier flag.
  bytes = good;
  bytes[36] = 5;
  WriteBytes(dir.File("flag.bin"), bytes);
  r = LoadCheckpoint(dir.File("flag.bin"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kCorruptData);
}

TEST(Llama2cErrorTest, LoadLlama2cRejectsGguf) {
  TempDir dir;
  const std::vector<std::uint8_t> bytes = {'G', 'G', 'U', 'F', 3, 0, 0, 0};
  WriteBytes(dir.File("x.gguf"), bytes);
  auto r = LoadLlama2c(dir.File("x.gguf"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
}

TEST(ModelConfigTest, ValidateRejectsBadShapes) {
  ModelConfig c = TinyModel().config;
  EXPECT_TRUE(c.Validate().ok());
  c.n_kv_heads = 3;  // does not divide 4
  EXPECT_FALSE(c.Validate().ok());
  c = TinyModel().config;
  c.dim = 30;  // not divisible by 4 heads
  EXPECT_FALSE(c.Validate().ok());
  c = TinyModel().config;
  c.seq_len = 0;
  EXPECT_FALSE(c.Validate().ok());
  ModelWeights w = TinyModel();
  w.layers[1].w2.pop_back();
  const Status s = w.CheckShapes();
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Contains(s.error().message(), "layers[1].w2")) << s.error().message();
}

}  // namespace
}  // namespace mpcache::model
