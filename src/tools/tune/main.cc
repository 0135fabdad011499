// mpcache-tune --model M --tokenizer T --prompts FILE --floor agreement:X | loss:X (SPEC §11):
// the cheapest MPCache configuration that keeps an accuracy floor on a calibration workload,
// written as a party file's `mpcache:` section.
//
// 1. The workload: the full cache's greedy generations from the prompts (--steps positions).
// 2. Time calibration (unless --no-calibrate): a few decode steps measured in process
//    (infer::RunDecodeStep) fit the time model of tune/workload_cost.h.
// 3. The search (tune/search.h): every candidate of --grid, accuracy in the fixed-point twin,
//    cost per decoded token from the cost model; a progress bar on stderr.
// 4. Out: the frontier table on stdout, the chosen fragment (--out FILE, else stdout), the
//    PNG plot (--plot), the check of the chosen policy's predicted step against a measured
//    one (unless --no-check) and its accuracy on held-out prompts (--heldout).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "common/guarded_main.h"
#include "model/agreement.h"
#include "model/checkpoint.h"
#include "model/compact_model.h"
#include "model/tokenizer.h"
#include "tools/common/cli_checks.h"
#include "tune/report.h"
#include "tune/search.h"
#include "tune/workload_cost.h"

namespace mpcache::tools {
namespace {

// Measured steps are timed this many times; the fastest counts.
constexpr int kRepeats = 2;

struct TuneArgs {
  std::string model, tokenizer, prompts, heldout, floor, out, plot;
  std::string security = "malicious", objective = "bytes", grid = "standard";
  int steps = 256;
  double confidence = 0.95;
  int threads = 1;
  int check_context = 0;  // 0: the workload's longest
  bool calibrate = true, check = true, all = false, json = false;
};

// A progress bar on a terminal; one line per candidate otherwise (logs, tests).
class ProgressBar {
 public:
  explicit ProgressBar(bool quiet) : tty_(isatty(2) != 0), quiet_(quiet) {}
  void operator()(std::size_t done, std::size_t total, const std::string& what) {
    if (quiet_ && !tty_) return;
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const double eta =
        done > 0 ? secs / static_cast<double>(done) * static_cast<double>(total - done) : 0;
    if (!tty_) {
      std::cerr << "mpcache-tune: " << done << "/" << total << " " << what << "\n";
      return;
    }
    constexpr int kWidth = 30;
    const int filled = total > 0 ? static_cast<int>(kWidth * done / total) : kWidth;
    std::string bar(static_cast<std::size_t>(filled), '#');
    bar.resize(kWidth, '.');
    char buf[200];
    std::snprintf(buf, sizeof buf, "\r[%s] %zu/%zu  eta %3.0fs  %-40.40s", bar.c_str(), done, total,
                  eta, what.c_str());
    std::cerr << buf << (done == total ? "\n" : "") << std::flush;
  }

 private:
  bool tty_, quiet_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

nlohmann::json CostJson(const tune::TokenCost& c) {
  return {{"bytes_per_token", c.bytes},
          {"rounds_per_token", c.rounds},
          {"seconds_per_token", c.seconds}};
}

// The word arguments, parsed (main refuses them as usage errors first).
struct Choices {
  tune::Floor floor;
  tune::Objective objective;
  tune::Grid grid;
};

Result<int> Tune(const TuneArgs& a, const Choices& c) {
  const tune::Floor& floor = c.floor;
  const tune::Objective objective = c.objective;
  const tune::Grid grid = c.grid;
  if (objective == tune::Objective::kSeconds && !a.calibrate) {
    return InvalidArgument(
        "--objective time needs the time calibration; drop --no-calibrate or use --objective "
        "bytes");
  }
  // The step cost model prices the wide public-weight engine (infer/step_cost.h).
  MPCACHE_ASSIGN_OR_RETURN(const bool compact, model::CompactModel::IsCompactCheckpoint(a.model));
  if (compact) {
    return Unsupported(a.model +
                       " holds compact (Q8_0/F16) matrices, whose secure step the cost model does "
                       "not price; tune on the same model as a llama2.c .bin or an F32 GGUF");
  }
  MPCACHE_ASSIGN_OR_RETURN(model::ModelWeights w, model::LoadCheckpoint(a.model));
  MPCACHE_ASSIGN_OR_RETURN(model::Tokenizer tok,
                           model::Tokenizer::LoadLlama2c(a.tokenizer, w.config.vocab_size));
  MPCACHE_ASSIGN_OR_RETURN(std::vector<std::string> prompts, model::ReadPromptLines(a.prompts));
  std::vector<std::string> heldout;
  if (!a.heldout.empty()) {
    MPCACHE_ASSIGN_OR_RETURN(heldout, model::ReadPromptLines(a.heldout));
  }
  model::FixedEngineOptions engine;
  engine.threads = a.threads;
  std::cerr << "mpcache-tune: the full cache's references of " << prompts.size() << " prompts ("
            << a.steps << " positions each)\n";
  MPCACHE_ASSIGN_OR_RETURN(const model::Workload wl,
                           model::MakeWorkload(w, tok, prompts, a.steps, engine));

  tune::CostSetting setting;
  setting.config = w.config;
  setting.malicious = a.security == "malicious";
  tune::CostModel cost(setting);
  int longest = 0;
  for (const auto& t : wl.tokens) longest = std::max(longest, static_cast<int>(t.size()) - 2);
  const int check_context = a.check_context > 0 ? a.check_context : std::max(1, longest);
  if (check_context + 1 > w.config.seq_len) {
    return InvalidArgument("--check-context " + std::to_string(check_context) +
                           " leaves no room for the step in the model's " +
                           std::to_string(w.config.seq_len) + " positions; use at most " +
                           std::to_string(w.config.seq_len - 1));
  }
  nlohmann::json j;
  if (a.calibrate) {
    const auto points = tune::CalibrationPoints(check_context);
    std::cerr << "mpcache-tune: calibrating the time model (" << points.size()
              << " measured decode steps)\n";
    MPCACHE_ASSIGN_OR_RETURN(auto ms,
                             tune::MeasureSteps(cost, a.model, points, a.threads, kRepeats));
    MPCACHE_ASSIGN_OR_RETURN(tune::TimeModel t, tune::FitTimeModel(ms));
    cost.set_time(t);
    j["time_model"] = {{"fixed_seconds", t.fixed_seconds},
                       {"seconds_per_round", t.per_round},
                       {"seconds_per_byte", t.per_byte},
                       {"seconds_per_compared_bit", t.per_compared_bit}};
  }

  const std::vector<model::MpcachePolicy> candidates = tune::CandidateGrid(grid, w.config.seq_len);
  ProgressBar bar(a.json);
  MPCACHE_ASSIGN_OR_RETURN(const tune::SearchResult r,
                           tune::Search(w, wl, candidates, cost, floor, objective, engine,
                                        [&](std::size_t d, std::size_t n, const std::string& what) {
                                          bar(d, n, what);
                                        }));
  const tune::Evaluated& chosen = r.evaluated[r.chosen];

  char line[512];
  std::snprintf(line, sizeof line,
                "mpcache-tune: %s, %s, floor %s kept with confidence %g on %zu prompts (%zu "
                "scored positions); objective %s per decoded token",
                a.model.c_str(), a.security.c_str(), floor.ToString().c_str(), a.confidence,
                prompts.size(), wl.positions, std::string(tune::ToString(objective)).c_str());
  const std::string header = line;
  std::snprintf(line, sizeof line,
                "chosen: %s: %.3f MB, %.1f rounds, %.4f s per token (the full cache: %.3f MB, "
                "%.1f rounds, %.4f s); agreement %.4f, loss %.4f nats/token",
                tune::Label(chosen.policy).c_str(), chosen.cost.bytes / 1e6, chosen.cost.rounds,
                chosen.cost.seconds, r.evaluated[0].cost.bytes / 1e6, r.evaluated[0].cost.rounds,
                r.evaluated[0].cost.seconds, chosen.fidelity.agreement, chosen.fidelity.ll_loss);
  const std::string summary = line;

  // The check: the chosen policy's step, predicted and measured.
  std::string check_line;
  if (a.check) {
    MPCACHE_ASSIGN_OR_RETURN(
        auto ms,
        tune::MeasureSteps(cost, a.model, {{chosen.policy, check_context}}, a.threads, kRepeats));
    const tune::Measurement& m = ms[0];
    const std::uint64_t pb = tune::TotalBytes(m.predicted), pr = tune::TotalRounds(m.predicted);
    const double pt = cost.time().Seconds(m.predicted);
    char predicted_time[64] = " (no time model: --no-calibrate)";
    if (cost.time().calibrated)
      std::snprintf(predicted_time, sizeof predicted_time, ", %.4f s", pt);
    std::snprintf(line, sizeof line,
                  "check at context %d: predicted %llu bytes, %llu rounds%s; measured %llu "
                  "bytes, %llu rounds, %.4f s",
                  check_context, static_cast<unsigned long long>(pb),
                  static_cast<unsigned long long>(pr), predicted_time,
                  static_cast<unsigned long long>(m.measured.bytes_per_party),
                  static_cast<unsigned long long>(m.measured.rounds), m.measured.seconds);
    check_line = line;
    nlohmann::json phases = nlohmann::json::object();
    for (const auto& [name, c] : m.predicted) {
      const auto it = m.measured.phases.find(name);
      phases[name] = {{"predicted_bytes", c.bytes},
                      {"predicted_rounds", c.rounds},
                      {"measured_bytes", it == m.measured.phases.end() ? 0 : it->second.bytes_sent},
                      {"measured_rounds", it == m.measured.phases.end() ? 0 : it->second.rounds},
                      {"measured_seconds", it == m.measured.phases.end() ? 0 : it->second.seconds}};
    }
    j["check"] = {{"context", check_context},
                  {"predicted_bytes", pb},
                  {"predicted_rounds", pr},
                  {"predicted_seconds", pt},
                  {"measured_bytes", m.measured.bytes_per_party},
                  {"measured_rounds", m.measured.rounds},
                  {"measured_seconds", m.measured.seconds},
                  {"phases", phases}};
  }
  std::string heldout_line;
  if (!heldout.empty()) {
    std::cerr << "mpcache-tune: the chosen policy on " << heldout.size() << " held-out prompts\n";
    MPCACHE_ASSIGN_OR_RETURN(const model::Workload hw,
                             model::MakeWorkload(w, tok, heldout, a.steps, engine));
    MPCACHE_ASSIGN_OR_RETURN(const model::Fidelity hf,
                             model::MeasureFidelity(w, hw, chosen.policy, engine));
    tune::Floor point = floor;  // held out: the measured figure itself
    point.z = 0;
    const bool keeps = point.Keeps(hf);
    std::snprintf(line, sizeof line,
                  "held-out: %zu prompts, agreement %.4f, loss %.4f nats/token: %s the floor %s",
                  heldout.size(), hf.agreement, hf.ll_loss, keeps ? "keeps" : "does NOT keep",
                  floor.ToString().c_str());
    heldout_line = line;
    j["heldout"] = {{"prompts", heldout.size()},
                    {"positions", hf.positions},
                    {"agreement", hf.agreement},
                    {"ll_loss", hf.ll_loss},
                    {"keeps_floor", keeps}};
  }

  const std::string fragment =
      tune::FragmentYaml(chosen.policy, "mpcache-tune: " + tune::Label(chosen.policy) + " (floor " +
                                            floor.ToString() + " on " + a.prompts + ", agreement " +
                                            std::to_string(chosen.fidelity.agreement) + ")");
  if (!a.out.empty()) {
    std::ofstream f(a.out);
    f << fragment;
    if (!f) return IoError("cannot write the fragment to " + a.out);
  }
  if (!a.plot.empty()) {
    MPCACHE_RETURN_IF_ERROR(tune::PlotFrontier(
        r, floor, objective, "mpcache-tune: " + a.model + " (" + a.security + ")", a.plot));
  }

  if (a.json) {
    nlohmann::json rows = nlohmann::json::array();
    for (std::size_t i = 0; i < r.evaluated.size(); ++i) {
      const tune::Evaluated& e = r.evaluated[i];
      rows.push_back(
          {{"knobs", tune::Label(e.policy)},
           {"cost", CostJson(e.cost)},
           {"agreement", e.fidelity.agreement},
           {"ll_loss", e.fidelity.ll_loss},
           {"keeps_floor", e.keeps},
           {"frontier", std::find(r.frontier.begin(), r.frontier.end(), i) != r.frontier.end()},
           {"chosen", i == r.chosen}});
    }
    j["model"] = a.model;
    j["security"] = a.security;
    j["floor"] = floor.ToString();
    j["objective"] = std::string(tune::ToString(objective));
    j["prompts"] = prompts.size();
    j["positions"] = wl.positions;
    j["candidates"] = rows;
    j["chosen"] = {{"knobs", tune::Label(chosen.policy)},
                   {"cost", CostJson(chosen.cost)},
                   {"agreement", chosen.fidelity.agreement},
                   {"ll_loss", chosen.fidelity.ll_loss}};
    j["fragment"] = fragment;
    std::cout << j.dump() << "\n";
    return 0;
  }
  std::cout << header << "\n\n" << tune::FrontierTable(r, floor, a.all) << "\n" << summary << "\n";
  if (!check_line.empty()) std::cout << check_line << "\n";
  if (!heldout_line.empty()) std::cout << heldout_line << "\n";
  if (!a.plot.empty()) std::cout << "plot: " << a.plot << "\n";
  if (!a.out.empty()) {
    std::cout << "fragment: " << a.out << "\n";
  } else {
    std::cout << "\n" << fragment;
  }
  return 0;
}

}  // namespace
}  // namespace mpcache::tools

int main(int argc, char** argv) {
  return mpcache::GuardedMain([&]() -> int {
    using mpcache::tools::TuneArgs;
    TuneArgs a;
    CLI::App app{
        "mpcache-tune: the cheapest MPCache configuration (a party file's mpcache: section) "
        "that keeps an accuracy floor on a calibration prompt set"};
    app.add_option("--model", a.model, "Checkpoint (llama2.c .bin, or GGUF of F32 matrices)")
        ->required();
    app.add_option("--tokenizer", a.tokenizer, "llama2.c tokenizer.bin")->required();
    app.add_option("--prompts", a.prompts, "Calibration prompts, one per line (# comments)")
        ->required();
    app.add_option("--floor", a.floor,
                   "agreement:X (greedy agreement with the full cache >= X) or loss:X (mean "
                   "log-likelihood loss <= X nats per token)")
        ->required();
    app.add_option("--heldout", a.heldout,
                   "Held-out prompts: the chosen policy's accuracy on them");
    app.add_option("--confidence", a.confidence,
                   "One-sided confidence with which the chosen configuration keeps the floor "
                   "(its accuracy's bound, from the spread between prompts; 0.5: the point "
                   "estimate)")
        ->capture_default_str();
    app.add_option("--steps", a.steps, "Positions per generation, prompt included")
        ->check(CLI::Range(2, 1 << 20))
        ->capture_default_str();
    app.add_option("--security", a.security, "malicious (SPDZ2k) or semi-honest")
        ->check(CLI::IsMember({"malicious", "semi-honest"}))
        ->capture_default_str();
    app.add_option("--objective", a.objective,
                   "What 'cheapest' minimises per decoded token: bytes, rounds or time")
        ->capture_default_str();
    app.add_option("--grid", a.grid, "Candidates: quick (8), standard (~30) or wide")
        ->capture_default_str();
    app.add_option("--out", a.out, "Write the mpcache: fragment here (default: stdout)");
    app.add_option("--plot", a.plot, "Write the frontier's PNG plot here (needs gnuplot)");
    app.add_option("--check-context", a.check_context,
                   "Context of the measured check step (default: the workload's longest)")
        ->check(CLI::Range(1, 1 << 20));
    app.add_option("--threads", a.threads, "Worker threads (fixed-point engine, parties)")
        ->check(CLI::Range(1, 256))
        ->capture_default_str();
    app.add_flag("!--no-calibrate", a.calibrate, "Skip the time calibration (no time figures)");
    app.add_flag("!--no-check", a.check, "Skip measuring the chosen policy's step");
    app.add_flag("--all", a.all, "Table every candidate, not only the frontier");
    app.add_flag("--json", a.json, "Print one JSON object on stdout");
    if (auto code = mpcache::tools::ParseCommandLine(app, argc, argv, "mpcache-tune")) {
      return *code;
    }
    // The word arguments' errors are usage errors, as CLI11's own.
    const auto usage = [](const mpcache::Error& e) {
      std::cerr << "mpcache-tune: error: " << e.ToString() << " (see --help)\n";
      return 2;
    };
    auto f = mpcache::tune::ParseFloor(a.floor);
    if (!f.ok()) return usage(f.error());
    auto o = mpcache::tune::ParseObjective(a.objective);
    if (!o.ok()) return usage(o.error());
    auto g = mpcache::tune::ParseGrid(a.grid);
    if (!g.ok()) return usage(g.error());
    auto z = mpcache::tune::ZForConfidence(a.confidence);
    if (!z.ok()) return usage(z.error());
    mpcache::tools::Choices c{*f, *o, *g};
    c.floor.z = *z;
    mpcache::Result<int> r = mpcache::tools::Tune(a, c);
    if (!r.ok()) {
      std::cerr << "mpcache-tune: error: " << r.error().ToString() << "\n";
      return 1;
    }
    return *r;
  });
}
