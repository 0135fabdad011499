#include "common/result.h"

namespace mpcache {

std::string_view ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return "invalid argument";
    case ErrorCode::kNotFound:
      return "not found";
    case ErrorCode::kCorruptData:
      return "corrupt data";
    case ErrorCode::kUnsupported:
      return "unsupported";
    case ErrorCode::kIo:
      return "i/o error";
    case ErrorCode::kProtocol:
      return "protocol error";
    case ErrorCode::kMacCheckFailed:
      return "MAC check failed";
    case ErrorCode::kExhausted:
      return "exhausted";
    case ErrorCode::kTimeout:
      return "timeout";
    case ErrorCode::kAborted:
      return "aborted";
    case ErrorCode::kInternal:
      return "internal error";
  }
  return "error";
}

std::string Error::ToString() const {
  std::string out(ErrorCodeName(code_));
  out += ": ";
  out += message_;
  return out;
}

Error Error::WithContext(std::string_view context) const {
  std::string m(context);
  m += ": ";
  m += message_;
  return {code_, std::move(m)};
}

}  // namespace mpcache
