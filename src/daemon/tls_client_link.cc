#include "daemon/tls_client_link.h"

#include <spdlog/fmt/fmt.h>

#include <string>

#include "daemon/client_protocol.h"

namespace mpcache::daemon {

Result<std::vector<std::uint64_t>> TlsClientLink::PromptInput(int pos, std::uint64_t mask_seq,
                                                              std::size_t n) {
  if (pos < 0 || pos >= prompt_len_) {
    return InvalidArgument("no prompt token at position " + std::to_string(pos));
  }
  // The client's prompt masks are one batch of prompt_len x vocab values, used in order.
  if (mask_seq != static_cast<std::uint64_t>(pos) || n != static_cast<std::size_t>(vocab_)) {
    return Internal("prompt input " + std::to_string(pos) + " does not use client mask batch " +
                    std::to_string(pos) + " of " + std::to_string(vocab_) + " values");
  }
  const auto begin = d_.begin() + static_cast<std::ptrdiff_t>(n * static_cast<std::size_t>(pos));
  return std::vector<std::uint64_t>(begin, begin + static_cast<std::ptrdiff_t>(n));
}

Result<std::vector<std::uint64_t>> TlsClientLink::NoiseInput(std::uint64_t mask_seq,
                                                             std::size_t n) {
  if (noise_.empty()) return InvalidArgument("the client's request does not sample");
  if (mask_seq != static_cast<std::uint64_t>(prompt_len_) || n != noise_.size()) {
    return Internal("the sampling noise (" + std::to_string(n) + " values, client mask batch " +
                    std::to_string(mask_seq) + ") is not the " + std::to_string(noise_.size()) +
                    " values of batch " + std::to_string(prompt_len_) + " the client sent");
  }
  return std::move(noise_);
}

Result<bool> TlsClientLink::TokenOutput(int pos, std::uint64_t mask_seq, std::uint64_t masked) {
  client_proto::Token t{session_, static_cast<std::uint32_t>(pos), mask_seq, masked};
  MPCACHE_RETURN_IF_ERROR(link_.Send(client_proto::Encode(t)));
  // The client answers each token with one Continue (a fixed-size message), for this
  // request and this position: anything else is refused, and the request with it.
  MPCACHE_ASSIGN_OR_RETURN(auto payload, link_.Recv(timeout_, client_proto::ContinueLimits()));
  MPCACHE_ASSIGN_OR_RETURN(client_proto::Continue c,
                           client_proto::Decode<client_proto::Continue>(payload));
  if (c.session != session_) {
    return ProtocolError(fmt::format(
        "the client's Continue is for session {:016x}, not this request's {:016x} (replayed "
        "from another request?)",
        c.session, session_));
  }
  if (c.pos != static_cast<std::uint32_t>(pos)) {
    return ProtocolError("the client's Continue is for position " + std::to_string(c.pos) +
                         ", but the token just released is position " + std::to_string(pos) +
                         " (out of order or replayed)");
  }
  return c.more;
}

Status TlsClientLink::Progress(int pos) {
  return link_.Send(
      client_proto::Encode(client_proto::Progress{session_, static_cast<std::uint32_t>(pos)}));
}

}  // namespace mpcache::daemon
