// mpcache-model subcommands. Each Add*Command registers its subcommand on `app`; when the
// user picks it, CLI11 runs the callback, which stores the command's exit code in *exit_code
// (0 on success; on error it has printed one clear line to stderr).
#pragma once

#include <CLI/CLI.hpp>

namespace mpcache::tools {

void AddInfoCommand(CLI::App& app, int* exit_code);
void AddRunCommand(CLI::App& app, int* exit_code);
void AddSynthCommand(CLI::App& app, int* exit_code);
void AddShareCommand(CLI::App& app, int* exit_code);
// MPCache vs the full cache in the fixed-point twin (accuracy_command.cc).
void AddAccuracyCommand(CLI::App& app, int* exit_code);

}  // namespace mpcache::tools
