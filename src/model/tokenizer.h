// SentencePiece-compatible BPE tokenizer, as llama2.c's encode()/decode(): text -> ids by
// (optional BOS) + dummy-prefix space + one token per UTF-8 code point (byte fallback to
// <0xXX> tokens at id byte+3) + greedy merging of the best-scoring adjacent pair; ids ->
// text with the leading-space rule after BOS and "<0xXX>" tokens decoded to raw bytes.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "model/vocabulary.h"

namespace mpcache::model {

class Tokenizer {
 public:
  // llama2.c tokenizer.bin: int32 max_token_length, then per token float32 score, int32
  // length, bytes. vocab_size is the model's (the file holds exactly that many tokens;
  // extra trailing bytes are an error). Pass 0 to read tokens until the end of the file.
  static Result<Tokenizer> LoadLlama2c(const std::string& path, int vocab_size);
  // From an in-memory vocabulary (e.g. a GGUF's embedded one).
  static Result<Tokenizer> FromVocabulary(Vocabulary vocab);

  // Writes the llama2.c tokenizer.bin format.
  static Status WriteLlama2c(const Vocabulary& vocab, const std::string& path);

  // llama2.c encode(text, bos, eos).
  Result<std::vector<int>> Encode(std::string_view text, bool bos, bool eos) const;
  // The bytes to print for `token` following `prev_token` (llama2.c decode()): drops the
  // leading space of a piece right after BOS, maps "<0xXX>" to the single byte XX.
  // Returns an empty view for an out-of-range id.
  std::string_view Decode(int prev_token, int token) const;
  // Concatenated Decode of a sequence (each token decoded after its predecessor; the first
  // after BOS if `after_bos`) as valid UTF-8: byte-fallback tokens reassembled into their
  // characters, control bytes dropped (model/utf8_text.h).
  std::string DecodeAll(const std::vector<int>& tokens, bool after_bos) const;

  int vocab_size() const { return static_cast<int>(vocab_.tokens.size()); }
  int bos_id() const { return vocab_.bos_id; }
  int eos_id() const { return vocab_.eos_id; }
  const Vocabulary& vocabulary() const { return vocab_; }
  // -1 if the exact piece is not in the vocabulary.
  int Lookup(std::string_view piece) const;

 private:
  explicit Tokenizer(Vocabulary vocab);
  Vocabulary vocab_;
  struct PieceHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  // piece -> id (first id wins on duplicates); looked up by string_view without copies.
  std::unordered_map<std::string, int, PieceHash, std::equal_to<>> index_;
  std::vector<std::string> byte_pieces_;  // 256 one-byte strings
};

// llama2.c safe_printf: whether a piece should be printed (non-empty; a single byte must be
// printable or whitespace — skips stray control bytes from byte-fallback tokens).
bool IsPrintablePiece(std::string_view piece);

}  // namespace mpcache::model
