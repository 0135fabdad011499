// mpcache-model: the model owner's tool — inspect a checkpoint, run it in plaintext (the
// reference engine), make synthetic checkpoints, split weights into per-party shares.
#include <iostream>
#include <string>

#include "common/guarded_main.h"
#include "tools/common/cli_checks.h"
#include "tools/model/commands.h"

int main(int argc, char** argv) {
  return mpcache::GuardedMain([&]() -> int {
    CLI::App app{"mpcache-model: inspect, run, synthesise and share Llama-2 checkpoints"};
    app.require_subcommand(1);
    int exit_code = 0;
    mpcache::tools::AddInfoCommand(app, &exit_code);
    mpcache::tools::AddRunCommand(app, &exit_code);
    mpcache::tools::AddSynthCommand(app, &exit_code);
    mpcache::tools::AddShareCommand(app, &exit_code);
    mpcache::tools::AddAccuracyCommand(app, &exit_code);
    if (auto unknown = mpcache::tools::UnknownSubcommand(app, argc, argv)) {
      std::cerr << "mpcache-model: " << *unknown << " (see --help)\n";
      return 2;
    }
    if (auto code = mpcache::tools::ParseCommandLine(app, argc, argv, "mpcache-model")) {
      return *code;
    }
    return exit_code;
  });
}
