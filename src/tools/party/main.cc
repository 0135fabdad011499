// mpcache-party --config config/partyN.yaml: one compute party (SPEC §2, §8).
#include <CLI/CLI.hpp>
#include <iostream>

#include "common/config.h"
#include "common/logging.h"
#include "daemon/party_service.h"

int main(int argc, char** argv) {
  CLI::App app{
      "mpcache-party: one of the three compute parties. Connects to the other parties over "
      "mutually authenticated TLS, streams preprocessing from the dealer, serves private "
      "generation requests from clients; /metrics and /healthz on metrics.port; stops on "
      "SIGTERM."};
  std::string config_path;
  app.add_option("--config", config_path, "Party YAML (config/party0.yaml ...)")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  auto cfg = mpcache::config::LoadPartyConfig(config_path);
  if (!cfg.ok()) {
    std::cerr << "error: " << cfg.error().ToString() << "\n";
    return 1;
  }
  auto log = mpcache::MakeStderrLogger("party" + std::to_string(cfg->party_id), cfg->log_level);
  if (!log.ok()) {
    std::cerr << "error: " << log.error().ToString() << "\n";
    return 1;
  }
  auto service = mpcache::daemon::PartyService::Create(std::move(cfg).value(), *log);
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
