// Weight-share files (infer/share_file.h), as a party opens its share at start. Property:
// a file that reads has tensors of the sizes its header declares.
#include <cstdint>

#include "fuzz_util.h"
#include "infer/share_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const mpcache::fuzz::MemoryFile file(data, size);
  auto share = mpcache::infer::ReadShareFile(file.path());
  if (!share.ok()) return 0;
  const auto& c = share->share.config;
  if (share->party < 0 || share->party >= share->parties || c.dim <= 0 || c.vocab_size <= 0 ||
      !share->share.CheckShapes().ok()) {
    mpcache::fuzz::Violated("a share file that reads has a sane header");
  }
  return 0;
}
