// A tokenizer vocabulary in llama2.c's convention, whatever file it came from (tokenizer.bin
// or a GGUF's embedded tokenizer.ggml.* arrays): SentencePiece's "▁" is stored as a plain
// space, BOS is "\n<s>\n", EOS is "\n</s>\n", byte-fallback tokens are "<0xXX>" at id byte+3.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mpcache::model {

struct Vocabulary {
  std::vector<std::string> tokens;  // piece bytes, indexed by token id
  std::vector<float> scores;        // merge priority (higher merges first), same size
  int bos_id = 1;
  int eos_id = 2;
  std::uint32_t max_token_length = 0;  // longest piece in bytes
};

}  // namespace mpcache::model
