// Helpers shared by the fuzz targets (libFuzzer entry points, tests/fuzz/*.cc).
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace mpcache::fuzz {

// The input as a file for the loaders that take a path: an anonymous memory file
// (memfd), named /proc/self/fd/N, closed when this goes out of scope. Nothing on disk.
class MemoryFile {
 public:
  MemoryFile(const std::uint8_t* data, std::size_t size) {
    fd_ = ::memfd_create("mpcache-fuzz", 0);
    if (fd_ < 0) Die("memfd_create failed");
    std::size_t at = 0;
    while (at < size) {
      const ssize_t n = ::write(fd_, data + at, size - at);
      if (n <= 0) Die("writing the memory file failed");
      at += static_cast<std::size_t>(n);
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~MemoryFile() { ::close(fd_); }
  MemoryFile(const MemoryFile&) = delete;
  MemoryFile& operator=(const MemoryFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  static void Die(const char* what) {
    std::fprintf(stderr, "fuzz harness: %s\n", what);
    std::abort();
  }
  int fd_ = -1;
  std::string path_;
};

// A property of the code under test did not hold: report and crash (libFuzzer saves the
// input).
[[noreturn]] inline void Violated(const char* property) {
  std::fprintf(stderr, "property violated: %s\n", property);
  std::abort();
}

}  // namespace mpcache::fuzz
