#include "model/gguf.h"

namespace mpcache::model {

Result<Checkpoint> LoadGgufCheckpoint(FileReader& reader) {
  return Unsupported(reader.path() + ": GGUF loading is not implemented yet");
}

Result<Checkpoint> LoadGguf(const std::string& path) {
  MPCACHE_ASSIGN_OR_RETURN(FileReader reader, FileReader::Open(path));
  return LoadGgufCheckpoint(reader);
}

}  // namespace mpcache::model
