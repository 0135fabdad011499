#include "model/tokenizer.h"

#include <cctype>
#include <cstring>

#include "model/file_io.h"
#include "model/utf8_text.h"

namespace mpcache::model {

namespace {

// "<0xXX>" -> XX (hex digits, either case), else -1.
int ParseBytePiece(std::string_view piece) {
  if (piece.size() != 6 || piece.substr(0, 3) != "<0x" || piece[5] != '>') return -1;
  int value = 0;
  for (int i = 3; i < 5; ++i) {
    const char ch = piece[static_cast<std::size_t>(i)];
    int nibble;
    if (ch >= '0' && ch <= '9') {
      nibble = ch - '0';
    } else if (ch >= 'A' && ch <= 'F') {
      nibble = ch - 'A' + 10;
    } else if (ch >= 'a' && ch <= 'f') {
      nibble = ch - 'a' + 10;
    } else {
      return -1;
    }
    value = value * 16 + nibble;
  }
  return value;
}

}  // namespace

bool IsPrintablePiece(std::string_view piece) {
  if (piece.empty()) return false;
  if (piece.size() == 1) {
    const unsigned char b = static_cast<unsigned char>(piece[0]);
    return std::isprint(b) || std::isspace(b);
  }
  return true;
}

Tokenizer::Tokenizer(Vocabulary vocab) : vocab_(std::move(vocab)) {
  index_.reserve(vocab_.tokens.size() * 2);
  for (std::size_t i = 0; i < vocab_.tokens.size(); ++i) {
    index_.emplace(vocab_.tokens[i], static_cast<int>(i));
  }
  byte_pieces_.reserve(256);
  for (int b = 0; b < 256; ++b) byte_pieces_.emplace_back(1, static_cast<char>(b));
}

Result<Tokenizer> Tokenizer::FromVocabulary(Vocabulary vocab) {
  if (vocab.tokens.empty()) return InvalidArgument("tokenizer vocabulary is empty");
  if (vocab.scores.size() != vocab.tokens.size()) {
    return InvalidArgument("tokenizer vocabulary has " + std::to_string(vocab.tokens.size()) +
                           " tokens but " + std::to_string(vocab.scores.size()) + " scores");
  }
  const int n = static_cast<int>(vocab.tokens.size());
  if (vocab.bos_id < 0 || vocab.bos_id >= n || vocab.eos_id < 0 || vocab.eos_id >= n) {
    return InvalidArgument("tokenizer BOS/EOS ids " + std::to_string(vocab.bos_id) + "/" +
                           std::to_string(vocab.eos_id) + " are outside the vocabulary of " +
                           std::to_string(n));
  }
  std::uint32_t longest = 0;
  for (const std::string& t : vocab.tokens) {
    longest = std::max<std::uint32_t>(longest, static_cast<std::uint32_t>(t.size()));
  }
  vocab.max_token_length = std::max(vocab.max_token_length, longest);
  return Tokenizer(std::move(vocab));
}

Result<Tokenizer> Tokenizer::LoadLlama2c(const std::string& path, int vocab_size) {
  if (vocab_size < 0) return InvalidArgument("vocab_size must be >= 0");
  Result<FileReader> opened = FileReader::Open(path);
  if (!opened.ok()) return opened.error().WithContext("tokenizer");
  FileReader& reader = opened.value();
  Vocabulary vocab;
  std::int32_t max_len = 0;
  MPCACHE_RETURN_IF_ERROR(reader.Read(&max_len, 4, "tokenizer max_token_length"));
  if (max_len <= 0 || max_len > (1 << 20)) {
    return CorruptData(path + ": not a llama2.c tokenizer: max_token_length " +
                       std::to_string(max_len) + " is not in 1..1048576");
  }
  vocab.max_token_length = static_cast<std::uint32_t>(max_len);
  for (int i = 0; vocab_size == 0 ? reader.remaining() > 0 : i < vocab_size; ++i) {
    const std::string what = "token " + std::to_string(i);
    if (vocab_size != 0 && reader.remaining() == 0) {
      return CorruptData(path + ": file is truncated: it holds " + std::to_string(i) +
                         " tokens, the model's vocabulary has " + std::to_string(vocab_size) +
                         " (tokenizer for a different model?)");
    }
    float score = 0.0f;
    std::int32_t len = 0;
    // NOLINTBEGIN(performance-inefficient-string-concatenation): labels for errors
    MPCACHE_RETURN_IF_ERROR(reader.Read(&score, 4, what + " score"));
    MPCACHE_RETURN_IF_ERROR(reader.Read(&len, 4, what + " length"));
    if (len < 0 || len > max_len) {
      return CorruptData(path + ": " + what + " has length " + std::to_string(len) +
                         ", expected 0.." + std::to_string(max_len) + " (max_token_length)");
      // NOLINTEND(performance-inefficient-string-concatenation)
    }
    std::string piece(static_cast<std::size_t>(len), '\0');
    MPCACHE_RETURN_IF_ERROR(reader.Read(piece.data(), piece.size(), what + " bytes"));
    vocab.tokens.push_back(std::move(piece));
    vocab.scores.push_back(score);
  }
  if (reader.remaining() != 0) {
    return CorruptData(path + ": " + std::to_string(reader.remaining()) + " bytes left after the " +
                       std::to_string(vocab_size) +
                       " tokens of the model's vocabulary (tokenizer for a different model?)");
  }
  if (vocab.tokens.size() < 3) {
    return CorruptData(path + ": tokenizer holds only " + std::to_string(vocab.tokens.size()) +
                       " tokens (needs at least <unk>, BOS, EOS)");
  }
  return FromVocabulary(std::move(vocab));
}

Status Tokenizer::WriteLlama2c(const Vocabulary& vocab, const std::string& path) {
  if (vocab.scores.size() != vocab.tokens.size()) {
    return InvalidArgument("vocabulary has different numbers of tokens and scores");
  }
  std::uint32_t longest = vocab.max_token_length;
  for (const auto& t : vocab.tokens) longest = std::max<std::uint32_t>(longest, t.size());
  MPCACHE_ASSIGN_OR_RETURN(FileWriter out, FileWriter::Create(path));
  MPCACHE_RETURN_IF_ERROR(out.WriteValue(static_cast<std::int32_t>(longest)));
  for (std::size_t i = 0; i < vocab.tokens.size(); ++i) {
    MPCACHE_RETURN_IF_ERROR(out.WriteValue(vocab.scores[i]));
    MPCACHE_RETURN_IF_ERROR(out.WriteValue(static_cast<std::int32_t>(vocab.tokens[i].size())));
    MPCACHE_RETURN_IF_ERROR(out.Write(vocab.tokens[i].data(), vocab.tokens[i].size()));
  }
  return out.Close();
}

int Tokenizer::Lookup(std::string_view piece) const {
  auto it = index_.find(piece);
  return it == index_.end() ? -1 : it->second;
}

Result<std::vector<int>> Tokenizer::Encode(std::string_view text, bool bos, bool eos) const {
  const int n_vocab = vocab_size();
  std::vector<int> tokens;
  tokens.reserve(text.size() + 3);
  if (bos) tokens.push_back(vocab_.bos_id);
  auto push_bytes = [&](std::string_view bytes) -> Status {
    for (unsigned char b : bytes) {
      const int id = static_cast<int>(b) + 3;
      if (id >= n_vocab) {
        return InvalidArgument("cannot encode byte 0x" + std::to_string(b) +
                               ": the vocabulary has no byte-fallback tokens");
      }
      tokens.push_back(id);
    }
    return Status::Ok();
  };
  if (!text.empty()) {
    // add_dummy_prefix: SentencePiece prepends a space.
    const int space = Lookup(" ");
    if (space >= 0) {
      tokens.push_back(space);
    } else {
      MPCACHE_RETURN_IF_ERROR(push_bytes(" "));
    }
  }
  // One token per UTF-8 code point (a lead byte plus up to 3 continuation bytes).
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = start + 1;
    while (end < text.size() && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80 &&
           end - start < 4) {
      ++end;
    }
    const std::string_view cp = text.substr(start, end - start);
    const int id = Lookup(cp);
    if (id >= 0) {
      tokens.push_back(id);
    } else {
      MPCACHE_RETURN_IF_ERROR(push_bytes(cp));
    }
    start = end;
  }
  // Greedy merges: repeatedly merge the adjacent pair whose concatenation is the
  // best-scoring vocabulary entry (first such pair on ties).
  std::string buffer;
  while (true) {
    float best_score = -1e10f;
    int best_id = -1;
    std::size_t best_idx = 0;
    for (std::size_t i = 0; i + 1 < tokens.size(); ++i) {
      buffer = vocab_.tokens[static_cast<std::size_t>(tokens[i])];
      buffer += vocab_.tokens[static_cast<std::size_t>(tokens[i + 1])];
      const int id = Lookup(buffer);
      if (id >= 0 && vocab_.scores[static_cast<std::size_t>(id)] > best_score) {
        best_score = vocab_.scores[static_cast<std::size_t>(id)];
        best_id = id;
        best_idx = i;
      }
    }
    if (best_id < 0) break;
    tokens[best_idx] = best_id;
    tokens.erase(tokens.begin() + static_cast<std::ptrdiff_t>(best_idx) + 1);
  }
  if (eos) tokens.push_back(vocab_.eos_id);
  return tokens;
}

std::string_view Tokenizer::Decode(int prev_token, int token) const {
  if (token < 0 || token >= vocab_size()) return {};
  std::string_view piece = vocab_.tokens[static_cast<std::size_t>(token)];
  if (prev_token == vocab_.bos_id && !piece.empty() && piece[0] == ' ') piece.remove_prefix(1);
  const int byte = ParseBytePiece(piece);
  if (byte >= 0) return byte_pieces_[static_cast<std::size_t>(byte)];
  return piece;
}

std::string Tokenizer::DecodeAll(const std::vector<int>& tokens, bool after_bos) const {
  Utf8Text text;
  std::string out;
  int prev = after_bos ? vocab_.bos_id : -1;
  for (int t : tokens) {
    out += text.Add(Decode(prev, t));
    prev = t;
  }
  return out + text.Finish();
}

}  // namespace mpcache::model
