// A blocking, ordered, message-oriented link to one peer: what the dealer protocol needs
// from a connection. SyncLink (TLS) implements it; tests use an in-memory pair.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/result.h"

namespace mpcache::daemon {

// The largest message a link accepts (SyncLink refuses bigger ones): the dealer makes no
// answer bigger than this, since no party could read it.
inline constexpr std::size_t kMaxLinkMessageBytes = std::size_t{1} << 30;

class MessageLink {
 public:
  virtual ~MessageLink() = default;
  // Queues one message (never waits for the peer).
  virtual Status Send(std::vector<std::uint8_t> payload) = 0;
  // The next message, or kTimeout / kIo (closed) / kAborted / kProtocol naming the peer.
  virtual Result<std::vector<std::uint8_t>> Recv(std::chrono::milliseconds timeout) = 0;
};

}  // namespace mpcache::daemon
