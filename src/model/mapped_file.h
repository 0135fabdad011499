// MappedFile: a whole file mapped read-only (PROT_READ, MAP_SHARED). Every process that maps
// the same file shares its pages through the page cache, so three party processes holding a
// 7 GB checkpoint use 7 GB of memory, not 21; nothing is copied into the process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "common/result.h"

namespace mpcache::model {

class MappedFile {
 public:
  // Errors name the file: kNotFound, kIo (not a regular file, mmap refused), kInvalidArgument
  // (a folder).
  static Result<MappedFile> Open(const std::string& path);

  MappedFile() = default;
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& path() const { return path_; }
  std::uint64_t size() const { return size_; }
  const std::uint8_t* data() const { return data_; }
  std::span<const std::uint8_t> bytes() const { return {data_, static_cast<std::size_t>(size_)}; }

 private:
  void Reset();
  std::string path_;
  const std::uint8_t* data_ = nullptr;
  std::uint64_t size_ = 0;
};

}  // namespace mpcache::model
