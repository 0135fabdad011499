#include "model/file_io.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>

namespace mpcache::model {

Result<FileReader> FileReader::Open(const std::string& path) {
  FileReader reader;
  reader.path_ = path;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return InvalidArgument(path +
                           " is a folder, not a file: pass the file itself (for a model, its "
                           ".bin or .gguf checkpoint inside)");
  }
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    const int err = errno;
    if (err == ENOENT) return NotFound(path + ": no such file");
    return IoError(path + ": cannot open: " + std::strerror(err));
  }
  reader.file_.reset(f);
  if (std::fseek(f, 0, SEEK_END) != 0) {
    return IoError(path + ": cannot seek (is it a regular file?)");
  }
  const long end = std::ftell(f);
  if (end < 0 || std::fseek(f, 0, SEEK_SET) != 0) {
    return IoError(path + ": cannot determine the file size (is it a regular file?)");
  }
  reader.size_ = static_cast<std::uint64_t>(end);
  return reader;
}

Status FileReader::Seek(std::uint64_t offset) {
  if (offset > size_) {
    return CorruptData(path_ + ": offset " + std::to_string(offset) + " is past the end of the " +
                       std::to_string(size_) + "-byte file");
  }
  if (offset > static_cast<std::uint64_t>(std::numeric_limits<long>::max()) ||
      std::fseek(file_.get(), static_cast<long>(offset), SEEK_SET) != 0) {
    return IoError(path_ + ": cannot seek to offset " + std::to_string(offset));
  }
  position_ = offset;
  return Status::Ok();
}

Error FileReader::Truncated(std::string_view what, std::uint64_t needed) const {
  return CorruptData(path_ + ": file is truncated: reading " + std::string(what) + " at offset " +
                     std::to_string(position_) + " needs " + std::to_string(needed) +
                     " bytes, only " + std::to_string(remaining()) + " left (file size " +
                     std::to_string(size_) + ")");
}

Status FileReader::Read(void* out, std::size_t n, std::string_view what) {
  if (n > remaining()) return Truncated(what, n);
  if (n == 0) return Status::Ok();
  const std::size_t got = std::fread(out, 1, n, file_.get());
  if (got != n) {
    return IoError(path_ + ": read error while reading " + std::string(what) + " at offset " +
                   std::to_string(position_));
  }
  position_ += n;
  return Status::Ok();
}

Status FileReader::ReadFloats(std::vector<float>& out, std::uint64_t count, std::string_view what) {
  std::uint64_t bytes = 0;
  if (!CheckedMul(count, sizeof(float), &bytes) || bytes > remaining()) {
    return Truncated(what, bytes == 0 ? std::numeric_limits<std::uint64_t>::max() : bytes);
  }
  out.resize(count);
  return Read(out.data(), bytes, what);
}

Result<FileWriter> FileWriter::Create(const std::string& path) {
  FileWriter writer;
  writer.path_ = path;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    return IoError(path + ": cannot create: " + std::strerror(errno));
  }
  writer.file_.reset(f);
  return writer;
}

Status FileWriter::Write(const void* data, std::size_t n) {
  if (!file_) return Internal(path_ + ": write after close");
  if (n == 0) return Status::Ok();
  if (std::fwrite(data, 1, n, file_.get()) != n) {
    return IoError(path_ + ": write failed: " + std::strerror(errno));
  }
  return Status::Ok();
}

Status FileWriter::Close() {
  if (!file_) return Status::Ok();
  std::FILE* f = file_.release();
  const bool flushed = std::fflush(f) == 0;
  const bool closed = std::fclose(f) == 0;
  if (!flushed || !closed) {
    return IoError(path_ + ": cannot finish writing (disk full?): " + std::strerror(errno));
  }
  return Status::Ok();
}

bool CheckedMul(std::uint64_t a, std::uint64_t b, std::uint64_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}

}  // namespace mpcache::model
