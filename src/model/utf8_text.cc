#include "model/utf8_text.h"

#include "model/tokenizer.h"

namespace mpcache::model {

namespace {

// Continuation bytes the lead byte asks for (0 for ASCII, -1 for a byte that cannot lead).
int Needs(unsigned char b) {
  if (b < 0x80) return 0;
  if (b >= 0xC2 && b <= 0xDF) return 1;
  if (b >= 0xE0 && b <= 0xEF) return 2;
  if (b >= 0xF0 && b <= 0xF4) return 3;
  return -1;  // a continuation byte, C0/C1 (overlong) or F5..FF (beyond U+10FFFF)
}

// Whether `b` may follow `pending` (its lead and the continuations so far): a continuation
// byte, within the narrower ranges the second byte has after E0 (no overlong), ED (no
// surrogates), F0 (no overlong) and F4 (nothing beyond U+10FFFF).
bool Continues(const std::string& pending, unsigned char b) {
  if (b < 0x80 || b > 0xBF) return false;
  if (pending.size() != 1) return true;
  switch (static_cast<unsigned char>(pending[0])) {
    case 0xE0:
      return b >= 0xA0;
    case 0xED:
      return b <= 0x9F;
    case 0xF0:
      return b >= 0x90;
    case 0xF4:
      return b <= 0x8F;
    default:
      return true;
  }
}

}  // namespace

void Utf8Text::Byte(unsigned char b, std::string& out) {
  if (need_ > 0) {
    if (Continues(pending_, b)) {
      pending_ += static_cast<char>(b);
      if (--need_ == 0) {
        out += pending_;
        pending_.clear();
      }
      return;
    }
    out += kReplacement;  // the sequence broke off: it can never become valid
    pending_.clear();
    need_ = 0;
  }
  const int n = Needs(b);
  if (n == 0) {
    // ASCII: printable or whitespace — llama2.c's own rule for single bytes (its control
    // bytes are dropped).
    const char c = static_cast<char>(b);
    if (IsPrintablePiece(std::string_view(&c, 1))) out += c;
  } else if (n < 0) {
    out += kReplacement;
  } else {
    pending_.assign(1, static_cast<char>(b));
    need_ = n;
  }
}

std::string Utf8Text::Add(std::string_view piece) {
  std::string out;
  for (char c : piece) Byte(static_cast<unsigned char>(c), out);
  return out;
}

std::string Utf8Text::Finish() {
  std::string out;
  if (need_ > 0) out += kReplacement;
  pending_.clear();
  need_ = 0;
  return out;
}

}  // namespace mpcache::model
