// Utf8Text (model/utf8_text.h): byte-fallback pieces reassembled into whole characters,
// held while incomplete, invalid bytes and forms turned into U+FFFD, control bytes dropped,
// and streaming that never takes back what it emitted.
#include "model/utf8_text.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace mpcache::model {
namespace {

const std::string kFffd(Utf8Text::kReplacement);

// Feeds every byte as its own piece (as byte-fallback tokens arrive); the streamed text.
std::string ByteByByte(const std::string& bytes, std::vector<std::string>* steps = nullptr) {
  Utf8Text t;
  std::string out;
  for (char c : bytes) {
    const std::string got = t.Add(std::string(1, c));
    if (steps != nullptr) steps->push_back(got);
    out += got;
  }
  return out + t.Finish();
}

TEST(Utf8Text, CharactersSplitOverByteTokensAreReassembled) {
  const std::string text = "Once upon a time \xF0\x9F\x90\x89 caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC";
  EXPECT_EQ(ByteByByte(text), text);
  std::vector<std::string> steps;
  ByteByByte("\xF0\x9F\x90\x89", &steps);
  // Held until the fourth byte, then emitted whole.
  EXPECT_EQ(steps, (std::vector<std::string>{"", "", "", "\xF0\x9F\x90\x89"}));
  Utf8Text t;
  EXPECT_EQ(t.Add("caf\xC3"), "caf");  // a piece ending mid-character keeps its tail
  EXPECT_EQ(t.Add("\xA9!"), "\xC3\xA9!");
  EXPECT_EQ(t.Finish(), "");
}

TEST(Utf8Text, WhatCanNeverBeValidBecomesTheReplacementCharacter) {
  EXPECT_EQ(ByteByByte("a\x80"
                       "b"),
            "a" + kFffd + "b");  // stray continuation
  EXPECT_EQ(ByteByByte("\xC3"
                       "b"),
            kFffd + "b");                                                    // broken off
  EXPECT_EQ(ByteByByte("\xC0\xAF"), kFffd + kFffd);                          // overlong
  EXPECT_EQ(ByteByByte("\xE0\x80\x80"), kFffd + kFffd + kFffd);              // overlong 3-byte
  EXPECT_EQ(ByteByByte("\xED\xA0\x80"), kFffd + kFffd + kFffd);              // surrogate
  EXPECT_EQ(ByteByByte("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);  // > U+10FFFF
  EXPECT_EQ(ByteByByte("\xFF"), kFffd);
  EXPECT_EQ(ByteByByte("end\xE6\x97"), "end" + kFffd);  // cut off by the end
}

TEST(Utf8Text, ControlBytesAreDroppedWhitespaceKept) {
  EXPECT_EQ(ByteByByte("a\x01\x7F"
                       "b\n\tc"),
            "ab\n\tc");
}

}  // namespace
}  // namespace mpcache::model
