// mpcache-dealer --config config/dealer.yaml: the preprocessing service (SPEC §2, §8).
#include <CLI/CLI.hpp>
#include <iostream>

#include "common/config.h"
#include "common/logging.h"
#include "daemon/dealer_service.h"

int main(int argc, char** argv) {
  CLI::App app{
      "mpcache-dealer: the trusted preprocessing service. Accepts the three parties over "
      "mutually authenticated TLS and streams each its seed-compressed share of every "
      "request's correlated randomness; /metrics and /healthz on metrics.port; stops on "
      "SIGTERM."};
  std::string config_path;
  app.add_option("--config", config_path, "Dealer YAML (config/dealer.yaml)")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  auto cfg = mpcache::config::LoadDealerConfig(config_path);
  if (!cfg.ok()) {
    std::cerr << "error: " << cfg.error().ToString() << "\n";
    return 1;
  }
  auto log = mpcache::MakeStderrLogger("dealer", cfg->log_level);
  if (!log.ok()) {
    std::cerr << "error: " << log.error().ToString() << "\n";
    return 1;
  }
  auto service = mpcache::daemon::DealerService::Create(std::move(cfg).value(), *log);
  if (!service.ok()) {
    std::cerr << "error: " << service.error().ToString() << "\n";
    return 1;
  }
  mpcache::Status s = (*service)->Run();
  if (!s.ok()) {
    std::cerr << "error: " << s.error().ToString() << "\n";
    return 1;
  }
  return 0;
}
