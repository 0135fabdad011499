// mpcache-party: one compute party as a daemon. Loads its config and model, accepts
// clients over TLS (certificate mpcache-client), and serves their requests one at a time
// (daemon/party_session.h): each request gets its own dealer session and TLS mesh, so a
// failed request leaves nothing behind and the next one starts clean. Serves /metrics and
// /healthz (Boost.Beast) and stops gracefully on SIGTERM/SIGINT: the running request is
// aborted (the peers and the client are told), connections are closed, Run() returns.
#pragma once

#include <memory>

#include "common/config.h"
#include "common/result.h"
#include "daemon/test_hooks.h"

namespace spdlog {
class logger;
}

namespace mpcache::daemon {

class PartyService {
 public:
  // `adversary_for_testing`: TEST ONLY (daemon/test_hooks.h); mpcache-party passes none.
  static Result<std::unique_ptr<PartyService>> Create(config::PartyConfig cfg,
                                                      std::shared_ptr<spdlog::logger> log,
                                                      AdversaryHook adversary_for_testing = {});
  ~PartyService();
  // Serves until SIGTERM/SIGINT. Ok after a graceful shutdown.
  Status Run();

 private:
  struct Impl;
  explicit PartyService(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace mpcache::daemon
