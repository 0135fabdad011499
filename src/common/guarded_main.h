// Every tool's main() body runs inside GuardedMain: an exception that escapes it (a
// library we call, an allocation) becomes one "error: ..." line and exit code 1 instead
// of std::terminate. The exit code stays main()'s to return.
#pragma once

#include <exception>
#include <iostream>

namespace mpcache {

template <typename Body>
int GuardedMain(Body&& body) noexcept {
  try {
    return body();
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
  } catch (...) {
    std::cerr << "error: unexpected failure\n";
  }
  return 1;
}

}  // namespace mpcache
