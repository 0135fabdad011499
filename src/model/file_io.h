// Bounds-checked binary file access for the checkpoint and tokenizer loaders. Every error
// names the file and says what was being read, what was expected and what was found.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"

namespace mpcache::model {

// A read-only file opened for sequential and positioned reads (little-endian host assumed).
class FileReader {
 public:
  static Result<FileReader> Open(const std::string& path);

  const std::string& path() const { return path_; }
  std::uint64_t size() const { return size_; }
  std::uint64_t position() const { return position_; }
  std::uint64_t remaining() const { return size_ - position_; }

  Status Seek(std::uint64_t offset);
  // Read exactly n bytes; `what` names the item for the error message ("header", ...).
  Status Read(void* out, std::size_t n, std::string_view what);
  template <typename T>
  Result<T> ReadValue(std::string_view what) {
    T value{};
    MPCACHE_RETURN_IF_ERROR(Read(&value, sizeof(T), what));
    return value;
  }
  // Read `count` float32 values into `out` (resized), checking the size first.
  Status ReadFloats(std::vector<float>& out, std::uint64_t count, std::string_view what);

  // "<path>: truncated reading <what> at offset X: needs N bytes, only M left".
  Error Truncated(std::string_view what, std::uint64_t needed) const;

 private:
  struct Closer {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  std::string path_;
  std::unique_ptr<std::FILE, Closer> file_;
  std::uint64_t size_ = 0;
  std::uint64_t position_ = 0;
};

// Write helper that remembers the first failure (used by the checkpoint writers).
class FileWriter {
 public:
  static Result<FileWriter> Create(const std::string& path);
  Status Write(const void* data, std::size_t n);
  template <typename T>
  Status WriteValue(const T& value) {
    return Write(&value, sizeof(T));
  }
  Status WriteFloats(std::span<const float> values) {
    return Write(values.data(), values.size_bytes());
  }
  // Flush and close; reports a failed flush (disk full) as an error.
  Status Close();

 private:
  struct Closer {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  std::string path_;
  std::unique_ptr<std::FILE, Closer> file_;
};

// Multiply sizes, failing instead of wrapping around (hostile headers).
bool CheckedMul(std::uint64_t a, std::uint64_t b, std::uint64_t* out);

}  // namespace mpcache::model
