// Model checkpoints (model/checkpoint.h): llama2.c legacy, ak42 versioned and GGUF, by the
// file's first bytes, as `mpcache-model` and the parties open them. Property: a checkpoint
// that loads has tensors of exactly the sizes its header declares.
#include <cstdint>

#include "fuzz_util.h"
#include "model/checkpoint.h"

namespace {

void CheckShapes(const mpcache::model::ModelWeights& w) {
  const auto& c = w.config;
  const std::size_t d = static_cast<std::size_t>(c.dim), h = static_cast<std::size_t>(c.hidden_dim),
                    kv = static_cast<std::size_t>(c.kv_dim()),
                    v = static_cast<std::size_t>(c.vocab_size);
  if (w.token_embedding.size() != v * d || w.rms_final.size() != d ||
      w.layers.size() != static_cast<std::size_t>(c.n_layers)) {
    mpcache::fuzz::Violated("a loaded checkpoint has the shapes its header declares");
  }
  for (const auto& l : w.layers) {
    if (l.wq.size() != d * d || l.wk.size() != kv * d || l.wv.size() != kv * d ||
        l.wo.size() != d * d || l.w1.size() != h * d || l.w2.size() != d * h ||
        l.w3.size() != h * d || l.rms_att.size() != d || l.rms_ffn.size() != d) {
      mpcache::fuzz::Violated("a loaded layer has the shapes its header declares");
    }
  }
  if (!c.shared_classifier && w.wcls.size() != v * d) {
    mpcache::fuzz::Violated("a loaded classifier has the shape its header declares");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const mpcache::fuzz::MemoryFile file(data, size);
  auto checkpoint = mpcache::model::OpenCheckpoint(file.path());
  if (checkpoint.ok()) CheckShapes(checkpoint->weights);
  return 0;
}
