// Utf8Text: the text of decoded pieces as valid UTF-8, for every place that shows a
// generation (mpcache-model run, the client, the bench's JSON). Byte-fallback tokens
// ("<0xF0>", "<0x9F>", ...) decode to single bytes; llama2.c prints only printable single
// bytes, which drops every character the vocabulary lacks (an emoji, most CJK). Here bytes
// are reassembled: a complete UTF-8 sequence is emitted whole, an incomplete one is held
// until its continuation bytes arrive, and what can never become valid (a stray continuation
// byte, a lead byte followed by something else, an overlong or out-of-range form, a
// sequence cut off by the end of the text) becomes U+FFFD. ASCII control bytes other than
// whitespace are still dropped, as llama2.c does.
//
// Streaming is prefix-stable: the concatenation of every Add() and the final Finish() is the
// whole text, and nothing once emitted is taken back.
#pragma once

#include <string>
#include <string_view>

namespace mpcache::model {

class Utf8Text {
 public:
  // Appends a piece; returns the bytes that became final with it (valid UTF-8).
  std::string Add(std::string_view piece);
  // Ends the text: a sequence still incomplete becomes U+FFFD.
  std::string Finish();

  static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

 private:
  void Byte(unsigned char b, std::string& out);
  std::string pending_;  // an incomplete sequence: its lead byte and continuations so far
  int need_ = 0;         // continuation bytes still missing
};

}  // namespace mpcache::model
