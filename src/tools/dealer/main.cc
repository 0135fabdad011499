// mpcache-dealer --config config/dealer.yaml: the preprocessing service (SPEC §2, §8).
#include <CLI/CLI.hpp>
#include <iostream>
#include <string>

#include "common/config.h"
#include "common/guarded_main.h"
#include "daemon/daemon_main.h"
#include "daemon/dealer_service.h"
#include "tools/common/cli_checks.h"
#include "tools/common/heap_policy.h"

int main(int argc, char** argv) {
  return mpcache::GuardedMain([&]() -> int {
    mpcache::tools::UseReusingHeap(/*one_arena=*/true);  // before any allocation worth keeping
    CLI::App app{
        "mpcache-dealer: the trusted preprocessing service. Accepts the three parties over "
        "mutually authenticated TLS and streams each its seed-compressed share of every "
        "request's correlated randomness; /metrics and /healthz on metrics.port; stops on "
        "SIGTERM."};
    std::string config_path;
    app.add_option("--config", config_path, "Dealer YAML (config/dealer.yaml)")->required();
    if (auto flag = mpcache::tools::UnknownFlag(app, argc, argv)) {
      std::cerr << "mpcache-dealer: " << *flag << " (see --help)\n";
      return 2;
    }
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      return app.exit(e);
    }
    return mpcache::daemon::RunDaemon<mpcache::daemon::DealerService>(
        mpcache::config::LoadDealerConfig(config_path),
        [](const mpcache::config::DealerConfig&) { return std::string("dealer"); });
  });
}
