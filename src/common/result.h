// Error handling for library code: functions return Status or Result<T>; only main() exits.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

namespace mpcache {

enum class ErrorCode : std::uint8_t {
  kInvalidArgument,  // caller passed something malformed; the message says how to fix it
  kNotFound,         // a file, key or peer that should exist does not
  kCorruptData,      // bytes on disk or on the wire disagree with their own framing
  kUnsupported,      // a valid but unsupported variant (format version, tensor type, ...)
  kIo,               // the operating system refused a read, write or connect
  kProtocol,         // a peer sent something the protocol does not allow
  kMacCheckFailed,   // an authenticated value failed its MAC check: abort, release nothing
  kExhausted,        // preprocessing or another bounded resource ran out
  kTimeout,          // a peer or operation did not answer in time
  kAborted,          // the session was aborted (by us or a peer)
  kInternal,         // a bug: an invariant of our own code does not hold
};

std::string_view ErrorCodeName(ErrorCode code);

class Error {
 public:
  Error(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "<code>: <message>", the one line a command prints before exiting non-zero.
  std::string ToString() const;
  // Prefix the message with context ("loading model.bin: " + message).
  Error WithContext(std::string_view context) const;

 private:
  ErrorCode code_;
  std::string message_;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT
  static Status Ok() { return Status(); }
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return error_; }

 private:
  Error error_{ErrorCode::kInternal, ""};
  bool ok_ = true;
};

inline Error InvalidArgument(std::string m) {
  return {ErrorCode::kInvalidArgument, std::move(m)};
}
inline Error NotFound(std::string m) {
  return {ErrorCode::kNotFound, std::move(m)};
}
inline Error CorruptData(std::string m) {
  return {ErrorCode::kCorruptData, std::move(m)};
}
inline Error Unsupported(std::string m) {
  return {ErrorCode::kUnsupported, std::move(m)};
}
inline Error IoError(std::string m) {
  return {ErrorCode::kIo, std::move(m)};
}
inline Error ProtocolError(std::string m) {
  return {ErrorCode::kProtocol, std::move(m)};
}
inline Error MacCheckFailed(std::string m) {
  return {ErrorCode::kMacCheckFailed, std::move(m)};
}
inline Error Exhausted(std::string m) {
  return {ErrorCode::kExhausted, std::move(m)};
}
inline Error Timeout(std::string m) {
  return {ErrorCode::kTimeout, std::move(m)};
}
inline Error Aborted(std::string m) {
  return {ErrorCode::kAborted, std::move(m)};
}
inline Error Internal(std::string m) {
  return {ErrorCode::kInternal, std::move(m)};
}

}  // namespace mpcache

#define MPCACHE_CONCAT_INNER_(a, b) a##b
#define MPCACHE_CONCAT_(a, b) MPCACHE_CONCAT_INNER_(a, b)

// Evaluate a Status expression; return its error from the enclosing function if it failed.
#define MPCACHE_RETURN_IF_ERROR(expr)     \
  do {                                    \
    const auto& mpcache_status_ = (expr); \
    if (!mpcache_status_.ok()) {          \
      return mpcache_status_.error();     \
    }                                     \
  } while (false)

// tmp and lhs name declarations, which cannot be parenthesised.
// NOLINTBEGIN(bugprone-macro-parentheses)
// MPCACHE_ASSIGN_OR_RETURN(auto x, MakeX()); declares x from a Result or returns its error.
#define MPCACHE_ASSIGN_OR_RETURN(lhs, expr) \
  MPCACHE_ASSIGN_OR_RETURN_IMPL_(MPCACHE_CONCAT_(mpcache_result_, __LINE__), lhs, expr)
#define MPCACHE_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                   \
  if (!tmp.ok()) {                                     \
    return tmp.error();                                \
  }                                                    \
  lhs = std::move(tmp).value()
// NOLINTEND(bugprone-macro-parentheses)
