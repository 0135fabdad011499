// Command-line checks shared by the tools with subcommands (mpcache-model, mpcache-bench,
// mpcache-client): CLI11 says only "A subcommand is required" for a misspelled command;
// this names the word and the commands there are.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

namespace mpcache::tools {

// The error line for argv[1] when it is a word (not a flag) that names no subcommand of
// `app`, e.g. "unknown command 'frob'; the commands are: info, run, synth"; nullopt
// otherwise (CLI11 then parses as usual).
inline std::optional<std::string> UnknownSubcommand(CLI::App& app, int argc, char** argv) {
  if (argc < 2) return std::nullopt;
  const std::string first = argv[1];
  if (first.empty() || first[0] == '-') return std::nullopt;
  std::string names;
  for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    if (sub->get_name() == first) return std::nullopt;
    names += (names.empty() ? "" : ", ") + sub->get_name();
  }
  return "unknown command '" + first + "'; the commands are: " + names;
}

}  // namespace mpcache::tools
