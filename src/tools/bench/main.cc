// mpcache-bench: reproducible benchmarks (time, bytes, rounds; online and offline phases
// reported separately). Subcommands live in their own files (see commands.h).
#include <iostream>

#include "common/guarded_main.h"
#include "tools/bench/commands.h"
#include "tools/common/cli_checks.h"
#include "tools/common/heap_policy.h"

int main(int argc, char** argv) {
  return mpcache::GuardedMain([&]() -> int {
    // The daemons' heap policy (freed buffers reused, not returned to the OS and faulted in
    // again), with an arena per thread: the three parties here are threads of one process
    // (tools/common/heap_policy.h).
    mpcache::tools::UseReusingHeap(/*one_arena=*/false);
    CLI::App app{"mpcache-bench: reproducible MPC benchmarks (time, bytes, rounds)"};
    app.require_subcommand(1);
    int exit_code = 0;
    mpcache::tools::AddOpsCommand(app, &exit_code);
    mpcache::tools::AddGenerateCommand(app, &exit_code);
    mpcache::tools::AddDecodeStepCommand(app, &exit_code);
    mpcache::tools::AddWeightsCommand(app, &exit_code);
    if (auto unknown = mpcache::tools::UnknownSubcommand(app, argc, argv)) {
      std::cerr << "mpcache-bench: " << *unknown << " (see --help)\n";
      return 2;
    }
    if (auto flag = mpcache::tools::UnknownFlag(app, argc, argv)) {
      std::cerr << "mpcache-bench: " << *flag << " (see --help)\n";
      return 2;
    }
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      return app.exit(e);
    }
    return exit_code;
  });
}
