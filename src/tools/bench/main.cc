// mpcache-bench: reproducible benchmarks (time, bytes, rounds; online and offline phases
// reported separately). Subcommands live in their own files (see commands.h).
#include <malloc.h>

#include <iostream>

#include "common/guarded_main.h"
#include "tools/bench/commands.h"
#include "tools/common/cli_checks.h"

int main(int argc, char** argv) {
  return mpcache::GuardedMain([&]() -> int {
    // Keep freed big buffers in the heap for reuse instead of returning them to the OS, as a
    // long-running party daemon reaches steady state: without this every multi-MB vector
    // is a fresh mmap and the online phase pays its page faults.
    // (32 MiB is glibc's largest allowed mmap threshold on 64-bit.)
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
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
