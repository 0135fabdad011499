#include "tools/bench/commands.h"

#include <iostream>

namespace mpcache::tools {

int EmitJsonOrError(const Result<nlohmann::json>& result, bool json) {
  if (!result.ok()) {
    std::cerr << "error: " << result.error().ToString() << "\n";
    return 1;
  }
  if (!json) return -1;
  std::cout << result->dump() << "\n";
  return 0;
}

}  // namespace mpcache::tools
