// Placeholder until the 'info' subcommand lands (being written now).
#include <iostream>

#include "tools/model/commands.h"

namespace mpcache::tools {

void AddInfoCommand(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("info", "(not available yet)");
  cmd->callback([exit_code] {
    std::cerr << "mpcache-model info: not available in this build yet\n";
    *exit_code = 2;
  });
}

}  // namespace mpcache::tools
