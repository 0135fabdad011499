// llama2.c tokenizer files (model/tokenizer.h): the first two bytes give the model's
// vocabulary size (1..4096), the rest is the file. A tokenizer that loads encodes and
// decodes a prompt without crashing; every token it makes is inside its vocabulary.
#include <cstdint>

#include "fuzz_util.h"
#include "model/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const int vocab = 1 + ((data[0] | (data[1] << 8)) % 4096);
  const mpcache::fuzz::MemoryFile file(data + 2, size - 2);
  auto tok = mpcache::model::Tokenizer::LoadLlama2c(file.path(), vocab);
  if (!tok.ok()) return 0;
  auto ids = tok->Encode("Once upon a time \xF0\x9F\x90\x89 caf\xC3\xA9", true, true);
  if (!ids.ok()) return 0;
  for (const int id : *ids) {
    if (id < 0 || id >= tok->vocab_size()) mpcache::fuzz::Violated("tokens are in the vocabulary");
  }
  (void)tok->DecodeAll(*ids, false);
  return 0;
}
