// One client request at one party, end to end: join the request's dealer session, hand
// the client its share of the mask seed, build the TLS mesh for the request's session id,
// take the masked prompt, run GenerationSession<P> (infer/session.h) with the dealer's
// preprocessing, stream released tokens to the client. Mirrors infer/in_process.cc across
// processes. A failure aborts the mesh (the other parties stop at once) and is returned
// with the party to blame when one is known; a failure before the mesh is told to the peers
// through their mesh setup (TellPeersSetupFailed).
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>

#include "balancer/session_balancer.h"
#include "common/config.h"
#include "common/fixed_sampling.h"
#include "daemon/client_protocol.h"
#include "daemon/metrics.h"
#include "daemon/sync_link.h"
#include "daemon/test_hooks.h"
#include "infer/model_identity.h"
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
  infer::ModelIdentity identity;                  // compared with the peers' every session
  std::shared_ptr<spdlog::logger> log;
  Metrics* metrics = nullptr;
  // Called with the request's mesh once it exists and with nullptr when it is gone, so
  // that shutdown can abort it from another thread.
  std::function<void(net::TlsMesh*)> on_mesh;
  // Polled while the dealer link and the mesh are being set up: a reason (the daemon is
  // shutting down) ends the request at once instead of after timeouts.connect_ms.
  std::function<std::optional<std::string>()> cancelled;
  // The daemon's listening socket at its mesh address (held from start to stop), or -1: the
  // request's mesh binds the address itself.
  int mesh_listen_fd = -1;
  AdversaryHook adversary_for_testing;  // TEST ONLY (daemon/test_hooks.h): empty in production
  // This party's price of a correction byte, measured over the daemon's sessions (one at a
  // time): a new request's first auction bids what the last ones measured instead of the
  // prior. nullptr: a meter of the request's own.
  balancer::CorrectionMeter* correction_meter = nullptr;
};

// The session ids this party has served (the most recent `capacity`): a request that
// reuses one is a replay — an honest client draws a fresh random id every time — and is
// refused before any dealer or mesh work. (A replay older than the memory still fails: the
// dealer makes fresh masks for it, so the replayed prompt is no one-hot and the parties'
// input check refuses it; infer/input_check.h.)
class UsedSessions {
 public:
  explicit UsedSessions(std::size_t capacity = std::size_t{1} << 16) : capacity_(capacity) {}
  // Ok the first time an id is seen; an error naming it afterwards.
  Status Use(std::uint64_t session);

 private:
  std::size_t capacity_;
  std::deque<std::uint64_t> order_;
  std::unordered_set<std::uint64_t> seen_;
};

// How a failed request ended at this party.
struct SessionEnd {
  std::optional<int> blamed;  // party id at fault, when known
  // It failed before this party reached the request's mesh setup, where the peers may be
  // waiting for it: TellPeersSetupFailed releases them.
  bool before_mesh = false;
};

// The party named in an error message ("party 2", "mpcache-party-2"), other than `self`.
// In a peer's abort ("session aborted by party 1 (mpcache-party-1): reason"), the party the
// abort blames, else one named in its reason: not the sender, which only passed it on (a
// client that broke the protocol is nobody's fault among the parties).
std::optional<int> BlamedParty(const std::string& message, int self);

// The positions a request runs (prompt included, at least the prompt), or an error naming
// the limit it exceeds: the client's vocabulary must be the model's, the prompt and the
// positions asked for must fit the model's context (seq_len), the sampling parameters
// their ranges. Refused at once, before any dealer or mesh work: a request beyond the
// context is never cut short silently.
Result<int> RequestPositions(const client_proto::Generate& request, const model::ModelConfig& model,
                             const std::string& model_file);

// The request's (public) sampling parameters.
SamplingParams RequestSampling(const client_proto::Generate& request);

Result<client_proto::Done> RunPartySession(const PartyRuntime& rt, SyncLink& client,
                                           const client_proto::Generate& request, SessionEnd* end);

// After a request failed before this party's mesh (SessionEnd::before_mesh): tells the peers
// setting up the request's mesh why, so that they stop at once rather than after
// timeouts.connect_ms (net::TlsMesh::TellSetupFailed; at most kTellPeersWithin, honours
// rt.cancelled). An error names the peers not told (the caller logs it).
inline constexpr std::chrono::milliseconds kTellPeersWithin{2000};
Status TellPeersSetupFailed(const PartyRuntime& rt, std::uint64_t session,
                            const std::string& reason);

}  // namespace mpcache::daemon
