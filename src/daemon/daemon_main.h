// What the daemons' main() functions share after parsing their command line: load the
// YAML config, make the logger, create the service and run it until SIGTERM. Every failure
// is one "error: ..." line on stderr; the returned exit code is main()'s to return.
#pragma once

#include <iostream>
#include <string>
#include <utility>

#include "common/logging.h"
#include "common/result.h"

namespace mpcache::daemon {

// logger_name(config) names the daemon in its log lines ("party0", "dealer"); `extra` goes
// to Service::Create after the config and the logger (test-only hooks).
template <typename Service, typename Config, typename NameFn, typename... Extra>
int RunDaemon(Result<Config> cfg, NameFn logger_name, Extra&&... extra) {
  const auto fail = [](const Error& e) {
    std::cerr << "error: " << e.ToString() << "\n";
    return 1;
  };
  if (!cfg.ok()) return fail(cfg.error());
  auto log = MakeStderrLogger(logger_name(*cfg), cfg->log_level);
  if (!log.ok()) return fail(log.error());
  auto service = Service::Create(std::move(cfg).value(), *log, std::forward<Extra>(extra)...);
  if (!service.ok()) return fail(service.error());
  const Status s = (*service)->Run();
  if (!s.ok()) return fail(s.error());
  return 0;
}

}  // namespace mpcache::daemon
