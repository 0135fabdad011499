// mpcache-dealer: the preprocessing service as a daemon. Accepts the parties' TLS
// connections (certificates mpcache-party-0..2), one connection per party per request;
// the first Join of a session id creates its DealerSession (fresh OS seeds), the others
// join it, and each connection's thread answers its party's requests in order. A session
// ends when its last connection closes. /metrics and /healthz over HTTP; graceful stop on
// SIGTERM/SIGINT (connections closed, Run() returns).
#pragma once

#include <memory>

#include "common/config.h"
#include "common/result.h"
#include "daemon/test_hooks.h"

namespace spdlog {
class logger;
}

namespace mpcache::daemon {

class DealerService {
 public:
  // `fault_for_testing`: empty in production (daemon/test_hooks.h).
  static Result<std::unique_ptr<DealerService>> Create(config::DealerConfig cfg,
                                                       std::shared_ptr<spdlog::logger> log,
                                                       DealerHook fault_for_testing = {});
  ~DealerService();
  Status Run();

 private:
  struct Impl;
  explicit DealerService(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace mpcache::daemon
