#include "model/gguf.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "model/file_io.h"
#include "model/tokenizer.h"
#include "unit/model/test_util.h"

namespace mpcache::model {
namespace {

using testing::ReadBytes;
using testing::SameWeights;
using testing::TempDir;
using testing::TinyModel;
using testing::TinyVocabulary;
using testing::WriteBytes;

bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

float MaxDiff(const std::vector<float>& a, const std::vector<float>& b) {
  float m = 0.0f;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    m = std::max(m, std::fabs(a[i] - b[i]));
  }
  return a.size() == b.size() ? m : INFINITY;
}

std::size_t Find(const std::vector<std::uint8_t>& bytes, const std::string& needle) {
  auto it = std::search(bytes.begin(), bytes.end(), needle.begin(), needle.end());
  return static_cast<std::size_t>(it - bytes.begin());
}

TEST(GgufTest, F32RoundTripWithVocabulary) {
  TempDir dir;
  for (bool shared : {true, false}) {
    const ModelWeights w = TinyModel(5, shared);
    Vocabulary full = TinyVocabulary({" ", "a", "b", " a", "ab", "hello world"});
    for (int i = static_cast<int>(full.tokens.size()); i < 300; ++i) {
      std::string piece = std::to_string(i);
      piece.insert(piece.begin(), 't');  // (not "t" + ...: GCC 12 -Wrestrict false positive)
      full.tokens.push_back(piece);
      full.scores.push_back(-100.0f);
    }
    ASSERT_TRUE(WriteGguf(w, &full, dir.File("m.gguf")).ok());
    auto fmt = DetectCheckpointFormat(dir.File("m.gguf"));
    ASSERT_TRUE(fmt.ok());
    EXPECT_EQ(*fmt, CheckpointFormat::kGguf);
    auto ckpt = OpenCheckpoint(dir.File("m.gguf"));
    ASSERT_TRUE(ckpt.ok()) << ckpt.error().ToString();
    EXPECT_EQ(ckpt->version, 3);
    EXPECT_EQ(ckpt->weight_type, "F32");
    EXPECT_TRUE(SameWeights(w, ckpt->weights));
    ASSERT_TRUE(ckpt->vocabulary.has_value());
    EXPECT_EQ(ckpt->vocabulary->tokens, full.tokens);
    EXPECT_EQ(ckpt->vocabulary->scores, full.scores);
    EXPECT_EQ(ckpt->vocabulary->bos_id, 1);
    EXPECT_EQ(ckpt->vocabulary->eos_id, 2);
  }
}

TEST(GgufTest, HeaderMetadataAndAlignment) {
  TempDir dir;
  ASSERT_TRUE(WriteGguf(TinyModel(), nullptr, dir.File("m.gguf")).ok());
  auto reader = FileReader::Open(dir.File("m.gguf"));
  ASSERT_TRUE(reader.ok());
  auto file = ReadGgufHeader(*reader);
  ASSERT_TRUE(file.ok()) << file.error().ToString();
  EXPECT_EQ(file->alignment, 32u);
  EXPECT_EQ(file->data_offset % 32, 0u);
  ASSERT_NE(file->Find("llama.embedding_length"), nullptr);
  EXPECT_EQ(file->Find("llama.embedding_length")->i, 32);
  EXPECT_EQ(file->Find("general.architecture")->s, "llama");
  const GgufTensorInfo* q = file->FindTensor("blk.1.attn_k.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->dims, (std::vector<std::uint64_t>{32, 16}));
  auto ckpt = OpenCheckpoint(dir.File("m.gguf"));
  ASSERT_TRUE(ckpt.ok());
  EXPECT_FALSE(ckpt->vocabulary.has_value());
  EXPECT_FALSE(ckpt->vocabulary_problem.empty());
}

TEST(GgufTest, F16AndQ8RoundTripWithinPrecision) {
  TempDir dir;
  const ModelWeights w = TinyModel(6, false);
  ASSERT_TRUE(WriteGguf(w, nullptr, dir.File("h.gguf"), GgmlType::kF16).ok());
  auto h = OpenCheckpoint(dir.File("h.gguf"));
  ASSERT_TRUE(h.ok()) << h.error().ToString();
  EXPECT_EQ(h->weight_type, "F16");
  EXPECT_LE(MaxDiff(h->weights.layers[0].wq, w.layers[0].wq), 0.3f / 1024.0f);
  EXPECT_LE(MaxDiff(h->weights.wcls, w.wcls), 0.5f / 1024.0f);
  EXPECT_EQ(h->weights.rms_final, w.rms_final);  // norms stay F32

  ASSERT_TRUE(WriteGguf(w, nullptr, dir.File("q.gguf"), GgmlType::kQ8_0).ok());
  auto q = OpenCheckpoint(dir.File("q.gguf"));
  ASSERT_TRUE(q.ok()) << q.error().ToString();
  EXPECT_EQ(q->weight_type, "Q8_0");
  EXPECT_LE(MaxDiff(q->weights.layers[1].w2, w.layers[1].w2), 0.3f / 127.0f);
  EXPECT_LE(MaxDiff(q->weights.token_embedding, w.token_embedding), 1.0f / 127.0f);
  EXPECT_GT(MaxDiff(q->weights.layers[1].w2, w.layers[1].w2), 0.0f);
}

// BF16 matrices (the writer makes none: llama.cpp's converters do). An F16 file is turned
// into a BF16 one in place (same element size, same offsets): every F16 tensor's type
// becomes 30 and each value x becomes bf16(x) = the top 16 bits of float(x). The BF16 load
// must give exactly those truncated values, tensor by tensor.
TEST(GgufTest, Bf16MatricesDecodeExactly) {
  TempDir dir;
  const ModelWeights w = TinyModel(7, false);
  ASSERT_TRUE(WriteGguf(w, nullptr, dir.File("h.gguf"), GgmlType::kF16).ok());
  auto h = OpenCheckpoint(dir.File("h.gguf"));
  ASSERT_TRUE(h.ok()) << h.error().ToString();
  auto reader = FileReader::Open(dir.File("h.gguf"));
  ASSERT_TRUE(reader.ok());
  auto header = ReadGgufHeader(*reader);
  ASSERT_TRUE(header.ok()) << header.error().ToString();
  auto bytes = ReadBytes(dir.File("h.gguf"));
  int patched = 0;
  for (const GgufTensorInfo& t : header->tensors) {
    if (t.type != static_cast<std::uint32_t>(GgmlType::kF16)) continue;
    const std::size_t at = Find(bytes, t.name);
    ASSERT_LT(at, bytes.size()) << t.name;
    const std::size_t type_at = at + t.name.size() + 4 + 8 * t.dims.size();
    std::uint32_t type = 0;
    std::memcpy(&type, bytes.data() + type_at, 4);
    ASSERT_EQ(type, 1u) << t.name;
    type = 30;
    std::memcpy(bytes.data() + type_at, &type, 4);
    std::uint8_t* data = bytes.data() + header->data_offset + t.offset;
    for (std::uint64_t i = 0; i < t.elements; ++i) {
      std::uint16_t half = 0;
      std::memcpy(&half, data + 2 * i, 2);
      const float f = HalfToFloat(half);
      std::uint32_t bits = 0;
      std::memcpy(&bits, &f, 4);
      const auto bf16 = static_cast<std::uint16_t>(bits >> 16);
      std::memcpy(data + 2 * i, &bf16, 2);
    }
    ++patched;
  }
  ASSERT_EQ(patched, 1 + 1 + 2 * 7);  // embedding, classifier, 7 matrices per layer
  WriteBytes(dir.File("b.gguf"), bytes);
  auto b = OpenCheckpoint(dir.File("b.gguf"));
  ASSERT_TRUE(b.ok()) << b.error().ToString();
  EXPECT_EQ(b->weight_type, "BF16");
  const auto truncated = [](const std::vector<float>& v) {
    std::vector<float> out(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
      std::uint32_t bits = 0;
      std::memcpy(&bits, &v[i], 4);
      bits &= 0xffff0000u;
      std::memcpy(&out[i], &bits, 4);
    }
    return out;
  };
  EXPECT_EQ(b->weights.token_embedding, truncated(h->weights.token_embedding));
  EXPECT_EQ(b->weights.wcls, truncated(h->weights.wcls));
  for (std::size_t l = 0; l < w.layers.size(); ++l) {
    const LayerWeights& bl = b->weights.layers[l];
    const LayerWeights& hl = h->weights.layers[l];
    EXPECT_EQ(bl.wq, truncated(hl.wq)) << l;
    EXPECT_EQ(bl.wk, truncated(hl.wk)) << l;
    EXPECT_EQ(bl.wv, truncated(hl.wv)) << l;
    EXPECT_EQ(bl.wo, truncated(hl.wo)) << l;
    EXPECT_EQ(bl.w1, truncated(hl.w1)) << l;
    EXPECT_EQ(bl.w2, truncated(hl.w2)) << l;
    EXPECT_EQ(bl.w3, truncated(hl.w3)) << l;
    EXPECT_EQ(bl.rms_att, hl.rms_att) << l;  // norms stay F32
  }
  EXPECT_GT(MaxDiff(b->weights.layers[0].wq, h->weights.layers[0].wq), 0.0f)
      << "the truncation changed nothing: the BF16 path did not run";
}

TEST(GgufTest, HalfConversion) {
  for (float f : {0.0f, -0.0f, 1.0f, -2.5f, 65504.0f, 6.103515625e-05f, 5.9604645e-08f, 0.1f}) {
    const float back = HalfToFloat(FloatToHalf(f));
    EXPECT_NEAR(back, f, std::fabs(f) / 1024.0f) << f;
  }
  EXPECT_TRUE(std::isinf(HalfToFloat(FloatToHalf(1e6f))));
  EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(NAN))));
  EXPECT_EQ(HalfToFloat(0x3C00), 1.0f);
  EXPECT_EQ(HalfToFloat(0x0001), 5.9604645e-08f);  // smallest subnormal
}

TEST(GgufErrorTest, WrongMagicAndVersion) {
  TempDir dir;
  ASSERT_TRUE(WriteGguf(TinyModel(), nullptr, dir.File("m.gguf")).ok());
  auto bytes = ReadBytes(dir.File("m.gguf"));
  auto bad = bytes;
  bad[0] = 'X';
  WriteBytes(dir.File("magic.gguf"), bad);
  auto r = LoadGguf(dir.File("magic.gguf"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kCorruptData);
  EXPECT_TRUE(Contains(r.error().message(), "wrong magic")) << r.error().message();
  bad = bytes;
  bad[4] = 1;  // GGUF v1
  WriteBytes(dir.File("v1.gguf"), bad);
  auto c = OpenCheckpoint(dir.File("v1.gguf"));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code(), ErrorCode::kUnsupported);
  EXPECT_TRUE(Contains(c.error().message(), "version 1")) << c.error().message();
}

TEST(GgufErrorTest, Truncated) {
  TempDir dir;
  ASSERT_TRUE(WriteGguf(TinyModel(), nullptr, dir.File("m.gguf")).ok());
  const auto bytes = ReadBytes(dir.File("m.gguf"));
  // Cut in the tensor data, in the tensor infos, in the metadata, in the header.
  for (std::size_t keep : {bytes.size() - 1, bytes.size() / 2, std::size_t{400}, std::size_t{100},
                           std::size_t{30}, std::size_t{10}}) {
    auto cut = bytes;
    testing::KeepHead(cut, keep);
    WriteBytes(dir.File("cut.gguf"), cut);
    auto r = OpenCheckpoint(dir.File("cut.gguf"));
    ASSERT_FALSE(r.ok()) << keep;
    EXPECT_EQ(r.error().code(), ErrorCode::kCorruptData) << keep;
    EXPECT_TRUE(Contains(r.error().message(), "truncated")) << r.error().message();
  }
}

TEST(GgufErrorTest, UnsupportedTensorType) {
  TempDir dir;
  ASSERT_TRUE(WriteGguf(TinyModel(), nullptr, dir.File("m.gguf")).ok());
  auto bytes = ReadBytes(dir.File("m.gguf"));
  const std::string name = "token_embd.weight";
  const std::size_t at = Find(bytes, name);
  ASSERT_LT(at, bytes.size());
  const std::size_t type_at = at + name.size() + 4 + 2 * 8;
  std::uint32_t type = 0;
  std::memcpy(&type, bytes.data() + type_at, 4);
  ASSERT_EQ(type, 0u);  // F32
  type = 12;            // Q4_K
  std::memcpy(bytes.data() + type_at, &type, 4);
  WriteBytes(dir.File("q4k.gguf"), bytes);
  auto r = OpenCheckpoint(dir.File("q4k.gguf"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kUnsupported);
  EXPECT_TRUE(Contains(r.error().message(), "Q4_K")) << r.error().message();
  EXPECT_TRUE(Contains(r.error().message(), "token_embd.weight")) << r.error().message();
}

// A Q8_0 row is whole 32-value blocks: a row length that is not a multiple of 32 cannot be
// decoded and is refused at the header, naming the tensor and the length.
TEST(GgufErrorTest, Q8RowLengthNotAMultipleOf32) {
  TempDir dir;
  ASSERT_TRUE(WriteGguf(TinyModel(), nullptr, dir.File("q.gguf"), GgmlType::kQ8_0).ok());
  auto bytes = ReadBytes(dir.File("q.gguf"));
  const std::string name = "blk.0.attn_q.weight";
  const std::size_t at = Find(bytes, name);
  ASSERT_LT(at, bytes.size());
  std::uint64_t ne0 = 0;
  std::memcpy(&ne0, bytes.data() + at + name.size() + 4, 8);
  ASSERT_EQ(ne0, 32u);
  ne0 = 33;
  std::memcpy(bytes.data() + at + name.size() + 4, &ne0, 8);
  WriteBytes(dir.File("q33.gguf"), bytes);
  auto r = OpenCheckpoint(dir.File("q33.gguf"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kCorruptData);
  EXPECT_TRUE(Contains(r.error().message(),
                       "Q8_0 tensor 'blk.0.attn_q.weight' has row length 33, "
                       "not a multiple of the block size 32"))
      << r.error().message();
}

TEST(GgufErrorTest, ShapeDisagreesWithHyperParameters) {
  TempDir dir;
  ASSERT_TRUE(WriteGguf(TinyModel(), nullptr, dir.File("m.gguf")).ok());
  auto bytes = ReadBytes(dir.File("m.gguf"));
  // llama.feed_forward_length 64 -> 48: the ffn tensors no longer match.
  const std::string key = "llama.feed_forward_length";
  const std::size_t at = Find(bytes, key);
  ASSERT_LT(at, bytes.size());
  const std::uint32_t hidden = 48;
  std::memcpy(bytes.data() + at + key.size() + 4, &hidden, 4);
  WriteBytes(dir.File("shape.gguf"), bytes);
  auto r = OpenCheckpoint(dir.File("shape.gguf"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kCorruptData);
  EXPECT_TRUE(Contains(r.error().message(), "ffn_gate")) << r.error().message();
}

}  // namespace
}  // namespace mpcache::model

namespace mpcache::model {
namespace {

// Corrupting random header bytes must give a clean error or a valid model, never a crash
// (run under ASan/UBSan in CI).
TEST(CorruptionTest, RandomHeaderCorruptionNeverCrashes) {
  testing::TempDir dir;
  const ModelWeights w = testing::TinyModel(12, false);
  ASSERT_TRUE(WriteGguf(w, nullptr, dir.File("m.gguf")).ok());
  ASSERT_TRUE(WriteLlama2c(w, dir.File("m.bin")).ok());
  ASSERT_TRUE(WriteLlama2cVersioned(w, dir.File("m.ak42"), 2).ok());
  std::uint64_t state = 99;
  for (const char* name : {"m.gguf", "m.bin", "m.ak42"}) {
    const auto good = testing::ReadBytes(dir.File(name));
    const std::size_t span = std::min<std::size_t>(good.size(), 1200);
    for (int trial = 0; trial < 150; ++trial) {
      auto bytes = good;
      for (int k = 0; k < 3; ++k) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        bytes[(state >> 33) % span] = static_cast<std::uint8_t>(state >> 17);
      }
      testing::WriteBytes(dir.File("bad"), bytes);
      auto r = OpenCheckpoint(dir.File("bad"));
      if (r.ok()) {
        EXPECT_TRUE(r->weights.CheckShapes().ok());
      } else {
        EXPECT_FALSE(r.error().message().empty());
      }
    }
  }
}

}  // namespace
}  // namespace mpcache::model
