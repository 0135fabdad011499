// mpcache-client generate --config config/client.yaml --prompt P --max-tokens N
//     [--temperature T --top-p P --top-k K --seed S] [--json]
// Private generation against running parties (SPEC §11): the text on stdout as tokens
// arrive (prompt included, as llama2.c prints it), a stats line on stderr; --json prints
// one JSON object on stdout instead. Errors: one line, non-zero exit.
#include <CLI/CLI.hpp>
#include <iostream>
#include <nlohmann/json.hpp>

#include "client/private_generation.h"
#include "common/config.h"
#include "common/guarded_main.h"
#include "common/logging.h"
#include "tools/common/cli_checks.h"
#include "tools/common/sampling_flags.h"

namespace {

int Generate(const std::string& config_path, const mpcache::client::GenerateOptions& opts,
             bool json) {
  auto cfg = mpcache::config::LoadClientConfig(config_path);
  if (!cfg.ok()) {
    std::cerr << "error: " << cfg.error().ToString() << "\n";
    return 1;
  }
  auto log = mpcache::MakeStderrLogger("client", cfg->log_level);
  if (!log.ok()) {
    std::cerr << "error: " << log.error().ToString() << "\n";
    return 1;
  }
  mpcache::client::TextSink sink;
  bool printed = false;
  if (!json) {
    sink = [&printed](std::string_view piece) {
      std::cout << piece << std::flush;
      printed = true;
    };
  }
  auto r = mpcache::client::GeneratePrivately(*cfg, opts, sink, *log);
  if (!r.ok()) {
    if (printed) std::cout << std::endl;  // end the partial text's line
    std::cerr << "error: " << r.error().ToString() << "\n";
    return 1;
  }
  const auto& p0 = r->parties.at(0);
  const double per = p0.decode_positions > 0 ? 1.0 / p0.decode_positions : 0.0;
  if (json) {
    nlohmann::json j;
    j["text"] = r->text;
    j["tokens"] = r->tokens;
    j["prompt_tokens"] = r->prompt_tokens;
    j["generated_tokens"] = r->generated;
    j["session_id"] = r->session_id;
    j["sampling"] = opts.sampling.Describe();
    if (!opts.sampling.Greedy()) j["seed"] = r->seed;
    j["seconds"] = r->seconds;
    j["seconds_per_token"] = p0.decode_seconds * per;
    j["bytes_per_token"] = static_cast<double>(p0.decode_bytes_sent) * per;
    j["rounds_per_token"] = static_cast<double>(p0.decode_rounds) * per;
    j["cache"] = p0.mpcache ? "mpcache" : "full";
    j["selected_tokens"] = p0.attended;
    j["revealed_selections"] = p0.revealed;
    j["dp_epsilon_spent"] = p0.epsilon;
    nlohmann::json parties = nlohmann::json::array();
    for (const auto& p : r->parties) {
      const double q = p.decode_positions > 0 ? 1.0 / p.decode_positions : 0.0;
      parties.push_back({{"party", p.party},
                         {"positions", p.positions},
                         {"decode_positions", p.decode_positions},
                         {"seconds", p.seconds},
                         {"seconds_per_token", p.decode_seconds * q},
                         {"bytes_per_token", static_cast<double>(p.decode_bytes_sent) * q},
                         {"rounds_per_token", static_cast<double>(p.decode_rounds) * q}});
    }
    j["parties"] = parties;
    std::cout << j.dump() << "\n";
    return 0;
  }
  std::cout << "\n";
  const int prompt_positions = p0.positions - p0.decode_positions;
  std::cerr << "mpcache-client: " << r->generated << (r->generated == 1 ? " token" : " tokens")
            << " in " << r->seconds << " s (the prompt's " << prompt_positions
            << (prompt_positions == 1 ? " position " : " positions ")
            << p0.seconds - p0.decode_seconds << " s); decode only: " << p0.decode_seconds * per
            << " s/token, " << static_cast<double>(p0.decode_bytes_sent) * per
            << " bytes/token and " << static_cast<double>(p0.decode_rounds) * per
            << " rounds/token sent per party (party 0); cache " << (p0.mpcache ? "mpcache" : "full")
            << ", last step attended " << p0.attended << " of " << p0.positions << " positions";
  if (!opts.sampling.Greedy()) {
    std::cerr << "; sampled (" << opts.sampling.Describe() << ", --seed " << r->seed << ")";
  }
  if (p0.revealed > 0) {
    std::cerr << "; " << p0.revealed << " selections revealed to the parties, epsilon spent "
              << p0.epsilon;
  }
  std::cerr << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return mpcache::GuardedMain([&]() -> int {
    CLI::App app{"mpcache-client: private Llama-2 generation against three MPCache parties"};
    app.require_subcommand(1);
    std::string config_path;
    mpcache::client::GenerateOptions opts;
    bool json = false;
    int exit_code = 0;
    CLI::App* gen = app.add_subcommand(
        "generate",
        "Secret-share the prompt to the parties over TLS and stream the reconstructed text");
    gen->add_option("--config", config_path, "Client YAML (config/client.yaml)")->required();
    gen->add_option("--prompt", opts.prompt, "Prompt text (default: BOS only)");
    gen->add_option("--max-tokens", opts.max_tokens,
                    "Positions incl. the prompt, as llama2.c's steps (default 64)")
        ->check(CLI::Range(1, 1 << 20));
    mpcache::tools::SamplingFlags sampling;
    sampling.Add(gen);
    gen->add_flag("--json", json, "Print one JSON object on stdout");
    gen->callback([&] {
      opts.sampling = sampling.params;
      opts.seed = sampling.Seed();
      exit_code = Generate(config_path, opts, json);
    });
    if (auto unknown = mpcache::tools::UnknownSubcommand(app, argc, argv)) {
      std::cerr << "mpcache-client: " << *unknown << " (see --help)\n";
      return 2;
    }
    if (auto flag = mpcache::tools::UnknownFlag(app, argc, argv)) {
      std::cerr << "mpcache-client: " << *flag << " (see --help)\n";
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
