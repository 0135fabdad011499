// Byte-level encoding of the daemon messages carried in DATA frames (little-endian,
// bounds-checked reads). Header-only so the client CLI can speak the client protocol
// (daemon/client_protocol.h) without linking the daemon.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "common/result.h"

namespace mpcache::daemon::wire {

class Writer {
 public:
  explicit Writer(std::uint8_t type) {
    // Room for a small message up front: fewer reallocations, and g++ 12 -O2 no longer
    // reports a false stringop-overflow when many small writes are inlined together.
    out_.reserve(64);
    out_.push_back(type);
  }
  Writer& U8(std::uint8_t v) {
    out_.push_back(v);
    return *this;
  }
  Writer& U32(std::uint32_t v) { return Raw(&v, 4); }
  Writer& U64(std::uint64_t v) { return Raw(&v, 8); }
  Writer& I32(std::int32_t v) { return Raw(&v, 4); }
  Writer& F64(double v) { return Raw(&v, 8); }
  Writer& Bytes(std::span<const std::uint8_t> b) {
    U64(b.size());
    out_.insert(out_.end(), b.begin(), b.end());
    return *this;
  }
  Writer& Str(std::string_view s) {
    return Bytes({reinterpret_cast<const std::uint8_t*>(s.data()), s.size()});
  }
  template <typename T>
  Writer& Vec(const std::vector<T>& v) {
    U64(v.size());
    return Raw(v.data(), v.size() * sizeof(T));
  }
  Writer& Raw(const void* p, std::size_t n) {
    const auto* b = static_cast<const std::uint8_t*>(p);
    out_.insert(out_.end(), b, b + n);
    return *this;
  }
  std::vector<std::uint8_t> Take() { return std::move(out_); }

 private:
  std::vector<std::uint8_t> out_;
};

class Reader {
 public:
  explicit Reader(std::span<const std::uint8_t> in) : in_(in) {}
  Result<std::uint8_t> U8() {
    std::uint8_t v = 0;
    MPCACHE_RETURN_IF_ERROR(Raw(&v, 1));
    return v;
  }
  Result<std::uint32_t> U32() { return Pod<std::uint32_t>(); }
  Result<std::uint64_t> U64() { return Pod<std::uint64_t>(); }
  Result<std::int32_t> I32() { return Pod<std::int32_t>(); }
  Result<double> F64() { return Pod<double>(); }
  Result<std::vector<std::uint8_t>> Bytes() { return Vec<std::uint8_t>(); }
  // Bytes() without the copy: a view into the message (valid while the message is).
  Result<std::span<const std::uint8_t>> BytesView() {
    MPCACHE_ASSIGN_OR_RETURN(std::uint64_t n, U64());
    if (n > in_.size() - pos_) return CorruptData("message: vector runs past the end");
    const std::span<const std::uint8_t> v = in_.subspan(pos_, static_cast<std::size_t>(n));
    pos_ += static_cast<std::size_t>(n);
    return v;
  }
  Result<std::string> Str() {
    MPCACHE_ASSIGN_OR_RETURN(auto b, Bytes());
    return std::string(b.begin(), b.end());
  }
  template <typename T>
  Result<std::vector<T>> Vec() {
    MPCACHE_ASSIGN_OR_RETURN(std::uint64_t n, U64());
    if (n > (in_.size() - pos_) / sizeof(T))
      return CorruptData("message: vector runs past the end");
    std::vector<T> v(static_cast<std::size_t>(n));
    MPCACHE_RETURN_IF_ERROR(Raw(v.data(), v.size() * sizeof(T)));
    return v;
  }
  Status Raw(void* p, std::size_t n) {
    if (n > in_.size() - pos_) return CorruptData("message: truncated");
    if (n) std::memcpy(p, in_.data() + pos_, n);
    pos_ += n;
    return Status::Ok();
  }
  Status End() const {
    if (pos_ != in_.size()) return CorruptData("message: trailing bytes");
    return Status::Ok();
  }

 private:
  template <typename T>
  Result<T> Pod() {
    T v{};
    MPCACHE_RETURN_IF_ERROR(Raw(&v, sizeof(T)));
    return v;
  }
  std::span<const std::uint8_t> in_;
  std::size_t pos_ = 0;
};

// One field of a message, by its C++ type: scalars as their bytes, bool as one byte,
// strings and vectors length-prefixed, fixed arrays raw. Put and Get are inverses, so a
// message lists its fields once (a tuple of references) for both directions.
inline void Put(Writer& w, bool v) {
  w.U8(v ? 1 : 0);
}
inline void Put(Writer& w, const std::string& v) {
  w.Str(v);
}
template <typename T>
requires std::is_arithmetic_v<T>
void Put(Writer& w, T v) {
  w.Raw(&v, sizeof(T));
}
template <typename T>
void Put(Writer& w, const std::vector<T>& v) {
  w.Vec(v);
}
template <std::size_t N>
void Put(Writer& w, const std::array<std::uint8_t, N>& v) {
  w.Raw(v.data(), N);
}

inline Status Get(Reader& r, bool& v) {
  MPCACHE_ASSIGN_OR_RETURN(std::uint8_t b, r.U8());
  // Only the two encodings Put writes: a message has one encoding, so equal messages are
  // equal bytes (the dealer compares the parties' requests).
  if (b > 1) return CorruptData("message: a flag of " + std::to_string(b) + " (0 or 1 expected)");
  v = b != 0;
  return Status::Ok();
}
inline Status Get(Reader& r, std::string& v) {
  MPCACHE_ASSIGN_OR_RETURN(v, r.Str());
  return Status::Ok();
}
template <typename T>
requires std::is_arithmetic_v<T> Status Get(Reader& r, T& v) {
  return r.Raw(&v, sizeof(T));
}
template <typename T>
Status Get(Reader& r, std::vector<T>& v) {
  MPCACHE_ASSIGN_OR_RETURN(v, r.template Vec<T>());
  return Status::Ok();
}
template <std::size_t N>
Status Get(Reader& r, std::array<std::uint8_t, N>& v) {
  return r.Raw(v.data(), N);
}

// Writes type byte + every field of a tuple of references.
template <typename Tuple>
std::vector<std::uint8_t> EncodeFields(std::uint8_t type, const Tuple& fields) {
  Writer w(type);
  std::apply([&](const auto&... f) { (Put(w, f), ...); }, fields);
  return w.Take();
}

// Reads every field of a tuple of references, in order, then checks nothing is left.
template <typename Tuple>
Status DecodeFields(Reader& r, Tuple fields) {
  Status s = Status::Ok();
  std::apply([&](auto&... f) { ((s = s.ok() ? Get(r, f) : s), ...); }, fields);
  MPCACHE_RETURN_IF_ERROR(s);
  return r.End();
}

}  // namespace mpcache::daemon::wire
