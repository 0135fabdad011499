// Placeholder until the 'run' subcommand lands (being written now).
#include <iostream>

#include "tools/model/commands.h"

namespace mpcache::tools {

void AddRunCommand(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("run", "(not available yet)");
  cmd->callback([exit_code] {
    std::cerr << "mpcache-model run: not available in this build yet\n";
    *exit_code = 2;
  });
}

}  // namespace mpcache::tools
