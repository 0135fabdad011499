// One client request at one party, end to end: join the request's dealer session, hand
// the client its share of the mask seed, build the TLS mesh for the request's session id,
// take the masked prompt, run GenerationSession<P> (infer/session.h) with the dealer's
// preprocessing, stream released tokens to the client. Mirrors infer/in_process.cc across
// processes. A failure aborts the mesh (the other parties stop at once) and is returned
// with the party to blame when one is known.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "common/config.h"
#include "daemon/client_protocol.h"
#include "daemon/metrics.h"
#include "daemon/sync_link.h"
#include "infer/ring_model.h"

namespace spdlog {
class logger;
}
namespace mpcache::net {
class TlsMesh;
}

namespace mpcache::daemon {

struct PartyRuntime {
  const config::PartyConfig* cfg = nullptr;
  net::asio::io_context* io = nullptr;            // runs the dealer link
  net::asio::ssl::context* tls = nullptr;         // this party's identity
  std::shared_ptr<const infer::RingModel> model;  // public weights, or this party's share
  std::shared_ptr<spdlog::logger> log;
  Metrics* metrics = nullptr;
  // Called with the request's mesh once it exists and with nullptr when it is gone, so
  // that shutdown can abort it from another thread.
  std::function<void(net::TlsMesh*)> on_mesh;
};

struct SessionFailure {
  Error error;
  std::optional<int> blamed;  // party id at fault, when known
};

// The party named in an error message ("party 2", "mpcache-party-2"), other than `self`.
std::optional<int> BlamedParty(const std::string& message, int self);

Result<client_proto::Done> RunPartySession(const PartyRuntime& rt, SyncLink& client,
                                           const client_proto::Generate& request,
                                           std::optional<int>* blamed);

}  // namespace mpcache::daemon
