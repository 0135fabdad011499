// A blocking, ordered, message-oriented link to one peer: what the dealer protocol needs
// from a connection. SyncLink (TLS) implements it; tests use an in-memory pair.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "common/result.h"

namespace mpcache::daemon {

class MessageLink {
 public:
  virtual ~MessageLink() = default;
  // Queues one message (never waits for the peer).
  virtual Status Send(std::vector<std::uint8_t> payload) = 0;
  // The next message, or kTimeout / kIo (closed) / kAborted / kProtocol naming the peer.
  virtual Result<std::vector<std::uint8_t>> Recv(std::chrono::milliseconds timeout) = 0;
};

}  // namespace mpcache::daemon
