// Placeholder until the 'synth' subcommand lands (being written now).
#include <iostream>

#include "tools/model/commands.h"

namespace mpcache::tools {

void AddSynthCommand(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("synth", "(not available yet)");
  cmd->callback([exit_code] {
    std::cerr << "mpcache-model synth: not available in this build yet\n";
    *exit_code = 2;
  });
}

}  // namespace mpcache::tools
