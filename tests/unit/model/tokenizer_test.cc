#include "model/tokenizer.h"

#include <gtest/gtest.h>

#include "unit/model/test_util.h"

namespace mpcache::model {
namespace {

using testing::ReadBytes;
using testing::TempDir;
using testing::TinyVocabulary;
using testing::WriteBytes;

// ids: 0 <unk>, 1 BOS, 2 EOS, 3..258 bytes, then the extra pieces from 259 on.
constexpr int kFirstExtra = 259;

Tokenizer Make(const std::vector<std::string>& extra) {
  auto t = Tokenizer::FromVocabulary(TinyVocabulary(extra));
  EXPECT_TRUE(t.ok());
  return std::move(t).value();
}

TEST(TokenizerTest, EncodeMergesBestPairFirst) {
  // Scores descend with position: " " best, then "h", "e", ..., merged pieces later.
  const Tokenizer t = Make({" ", "h", "e", "l", "o", "he", "ll", "llo", " he", " hello", "hello"});
  auto ids = t.Encode("hello", true, false);
  ASSERT_TRUE(ids.ok());
  // " h e l l o" -> "he" (best), "ll", "llo", " he", then " hello" (hello never reached: the
  // space merges with "he" first since " he" is scored above "hello").
  EXPECT_EQ(*ids, (std::vector<int>{1, kFirstExtra + 9}));
  auto with_eos = t.Encode("hello", false, true);
  ASSERT_TRUE(with_eos.ok());
  EXPECT_EQ(*with_eos, (std::vector<int>{kFirstExtra + 9, 2}));
}

TEST(TokenizerTest, EmptyTextIsBosOnly) {
  const Tokenizer t = Make({" "});
  auto ids = t.Encode("", true, false);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, std::vector<int>{1});
}

TEST(TokenizerTest, ByteFallbackForUnknownCodePoints) {
  const Tokenizer t = Make({" ", "a"});
  // "é" is two bytes (0xC3 0xA9) and not in the vocabulary: byte tokens at byte + 3.
  auto ids = t.Encode("a\xC3\xA9", false, false);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<int>{kFirstExtra, kFirstExtra + 1, 0xC3 + 3, 0xA9 + 3}));
  // A code point in the vocabulary is one token.
  const Tokenizer t2 = Make({" ", "\xC3\xA9"});
  ids = t2.Encode("\xC3\xA9", false, false);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<int>{kFirstExtra, kFirstExtra + 1}));
}

TEST(TokenizerTest, DecodeLeadingSpaceAndRawBytes) {
  const Tokenizer t = Make({" ", " Once", "upon"});
  const int once = kFirstExtra + 1;
  EXPECT_EQ(t.Decode(1, once), "Once");       // after BOS the leading space is dropped
  EXPECT_EQ(t.Decode(once, once), " Once");   // elsewhere it is kept
  EXPECT_EQ(t.Decode(once, 0x0A + 3), "\n");  // <0x0A> -> newline byte
  EXPECT_EQ(t.Decode(once, 0x41 + 3), "A");
  EXPECT_EQ(t.Decode(once, 99999), "");  // out of range
  EXPECT_EQ(t.DecodeAll({once, kFirstExtra + 2, 0x0A + 3, 0x01 + 3}, true), "Onceupon\n");
  EXPECT_TRUE(IsPrintablePiece("\n"));
  EXPECT_FALSE(IsPrintablePiece(std::string(1, '\x01')));
  EXPECT_FALSE(IsPrintablePiece(""));
}

TEST(TokenizerTest, FileRoundTrip) {
  TempDir dir;
  const Vocabulary v = TinyVocabulary({" ", "ab", " ab"});
  ASSERT_TRUE(Tokenizer::WriteLlama2c(v, dir.File("tok.bin")).ok());
  auto t = Tokenizer::LoadLlama2c(dir.File("tok.bin"), static_cast<int>(v.tokens.size()));
  ASSERT_TRUE(t.ok()) << t.error().ToString();
  EXPECT_EQ(t->vocabulary().tokens, v.tokens);
  EXPECT_EQ(t->vocabulary().scores, v.scores);
  EXPECT_EQ(t->Lookup(" ab"), kFirstExtra + 2);
  auto any = Tokenizer::LoadLlama2c(dir.File("tok.bin"), 0);  // read to the end
  ASSERT_TRUE(any.ok());
  EXPECT_EQ(any->vocab_size(), static_cast<int>(v.tokens.size()));
}

TEST(TokenizerErrorTest, MissingTruncatedAndMismatched) {
  TempDir dir;
  auto missing = Tokenizer::LoadLlama2c(dir.File("nope.bin"), 512);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(missing.error().message().find("nope.bin"), std::string::npos);

  const Vocabulary v = TinyVocabulary({" ", "ab"});
  ASSERT_TRUE(Tokenizer::WriteLlama2c(v, dir.File("tok.bin")).ok());
  auto bytes = ReadBytes(dir.File("tok.bin"));
  testing::KeepHead(bytes, bytes.size() - 1);
  WriteBytes(dir.File("cut.bin"), bytes);
  auto cut = Tokenizer::LoadLlama2c(dir.File("cut.bin"), static_cast<int>(v.tokens.size()));
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.error().code(), ErrorCode::kCorruptData);
  EXPECT_NE(cut.error().message().find("truncated"), std::string::npos) << cut.error().message();

  // Fewer tokens in the file than the model's vocabulary.
  auto fewer = Tokenizer::LoadLlama2c(dir.File("tok.bin"), 512);
  ASSERT_FALSE(fewer.ok());
  EXPECT_EQ(fewer.error().code(), ErrorCode::kCorruptData);
  // More tokens than the model's vocabulary.
  auto more = Tokenizer::LoadLlama2c(dir.File("tok.bin"), 100);
  ASSERT_FALSE(more.ok());
  EXPECT_EQ(more.error().code(), ErrorCode::kCorruptData);

  // Garbage: an absurd max_token_length / token length.
  WriteBytes(dir.File("junk.bin"), {0xFF, 0xFF, 0xFF, 0x7F, 1, 2, 3});
  auto junk = Tokenizer::LoadLlama2c(dir.File("junk.bin"), 0);
  ASSERT_FALSE(junk.ok());
  EXPECT_EQ(junk.error().code(), ErrorCode::kCorruptData);
}

}  // namespace
}  // namespace mpcache::model
