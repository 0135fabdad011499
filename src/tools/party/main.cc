// mpcache-party --config config/partyN.yaml: one compute party (SPEC §2, §8).
#include <CLI/CLI.hpp>
#include <iostream>
#include <string>

#include "common/config.h"
#include "common/guarded_main.h"
#include "daemon/daemon_main.h"
#include "daemon/party_service.h"
#include "tools/common/cli_checks.h"
#include "tools/common/heap_policy.h"

int main(int argc, char** argv) {
  return mpcache::GuardedMain([&]() -> int {
    mpcache::tools::UseReusingHeap(/*one_arena=*/true);  // before any allocation worth keeping
    CLI::App app{
        "mpcache-party: one of the three compute parties. Connects to the other parties over "
        "mutually authenticated TLS, streams preprocessing from the dealer, serves private "
        "generation requests from clients; /metrics and /healthz on metrics.port; stops on "
        "SIGTERM."};
    std::string config_path;
    app.add_option("--config", config_path, "Party YAML (config/party0.yaml ...)")->required();
    if (auto flag = mpcache::tools::UnknownFlag(app, argc, argv)) {
      std::cerr << "mpcache-party: " << *flag << " (see --help)\n";
      return 2;
    }
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      return app.exit(e);
    }
    return mpcache::daemon::RunDaemon<mpcache::daemon::PartyService>(
        mpcache::config::LoadPartyConfig(config_path),
        [](const mpcache::config::PartyConfig& c) { return "party" + std::to_string(c.party_id); });
  });
}
