// Command-line checks shared by the tools: CLI11 says only "A subcommand is required" for a
// misspelled command, and reports a missing required flag before an unknown one (a typo of
// --config reads "--config is required"); these name the word that is wrong.
#pragma once

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>

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

// The error line for the first "--flag" (or "--flag=value") that no option of the command
// it follows (or of the commands it is under) knows, e.g. "unknown flag '--max-token' for
// 'generate'"; nullopt when every flag is known (CLI11 then parses as usual). Words after
// "--" are not flags.
inline std::optional<std::string> UnknownFlag(CLI::App& app, int argc, char** argv) {
  CLI::App* current = &app;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;
    if (arg.rfind("--", 0) != 0) {
      if (!arg.empty() && arg[0] != '-') {
        const auto subs =
            current->get_subcommands([&](CLI::App* sub) { return sub->check_name(arg); });
        if (!subs.empty()) current = subs.front();
      }
      continue;
    }
    const std::string name = arg.substr(0, arg.find('='));
    bool known = false;
    for (CLI::App* at = current; at != nullptr && !known; at = at->get_parent()) {
      known = at->get_option_no_throw(name) != nullptr;
    }
    if (!known) {
      return "unknown flag '" + name + "'" +
             (current == &app ? std::string() : " for '" + current->get_name() + "'");
    }
  }
  return std::nullopt;
}

// Parses argv into `app` after the unknown-flag check. Returns the code main() should exit
// with now: 0 after --help or --version (CLI11 prints them), 2 for a bad command line,
// printed as one line "<tool>: <error> (see --help)"; nullopt when parsing succeeded.
inline std::optional<int> ParseCommandLine(CLI::App& app, int argc, char** argv,
                                           std::string_view tool) {
  if (auto flag = UnknownFlag(app, argc, argv)) {
    std::cerr << tool << ": " << *flag << " (see --help)\n";
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string message = e.what();
    std::replace(message.begin(), message.end(), '\n', ' ');
    std::cerr << tool << ": " << message << " (see --help)\n";
    return 2;
  }
  return std::nullopt;
}

}  // namespace mpcache::tools
