#include "tune/report.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace mpcache::tune {
namespace {

std::string Num(double v, const char* fmt = "%g") {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

double Accuracy(const Evaluated& e, const Floor& floor) {
  return floor.kind == Floor::Kind::kAgreement ? e.fidelity.agreement : e.fidelity.ll_loss;
}

// gnuplot strings are single-quoted: a quote is doubled.
std::string Quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

}  // namespace

config::MpcacheKnobs KnobsFromPolicy(const std::optional<model::MpcachePolicy>& policy) {
  config::MpcacheKnobs k;
  if (!policy) {
    k.cache = config::CacheMode::kFull;
    return k;
  }
  const model::MpcachePolicy& p = *policy;
  k.cache = config::CacheMode::kMpcache;
  k.static_keep_ratio = p.static_keep_ratio;
  k.observation_window = p.observation_window;
  k.impact_weight = p.impact_weight;
  k.sigmoid_eviction = p.eviction_score == model::EvictionScore::kSigmoid;
  k.level1_cluster_tokens = p.cluster_tokens;
  k.level1_keep_ratio = p.keep_ratio;
  k.level2_cluster_tokens = p.two_levels() ? p.level2_tokens : p.cluster_tokens;
  k.level2_keep_ratio = p.level2_keep_ratio;
  k.alpha = p.alpha;
  k.mean_representative = p.representative == model::Representative::kMean;
  k.share_layers = p.share_layers;
  k.residual_path = p.residual;
  k.layer_share_decay = p.layer_share_decay;
  k.reveal = p.reveal;
  k.dp_epsilon = p.dp_epsilon;
  k.dp_sensitivity = p.dp_sensitivity;
  return k;
}

std::string FragmentYaml(const std::optional<model::MpcachePolicy>& policy,
                         const std::string& comment) {
  const config::MpcacheKnobs k = KnobsFromPolicy(policy);
  std::ostringstream o;
  std::istringstream lines(comment);
  for (std::string line; std::getline(lines, line);) o << "# " << line << "\n";
  const auto b = [](bool v) { return v ? "true" : "false"; };
  o << "mpcache:\n";
  o << "  cache: " << (policy ? "mpcache" : "full") << "\n";
  o << "  static_keep_ratio: " << Num(k.static_keep_ratio) << "\n";
  o << "  observation_window: " << Num(k.observation_window) << "\n";
  o << "  eviction_score: " << (k.sigmoid_eviction ? "sigmoid" : "softmax") << "\n";
  o << "  impact_weight: " << Num(k.impact_weight) << "\n";
  o << "  level1_cluster_tokens: " << k.level1_cluster_tokens << "\n";
  o << "  level1_keep_ratio: " << Num(k.level1_keep_ratio) << "\n";
  o << "  level2_cluster_tokens: " << k.level2_cluster_tokens << "\n";
  o << "  level2_keep_ratio: " << Num(k.level2_keep_ratio) << "\n";
  o << "  alpha: " << Num(k.alpha) << "\n";
  o << "  representative: " << (k.mean_representative ? "mean" : "minmax") << "\n";
  o << "  share_layers: " << b(k.share_layers) << "\n";
  o << "  residual_path: " << b(k.residual_path) << "\n";
  o << "  layer_share_decay: " << Num(k.layer_share_decay) << "\n";
  o << "  reveal: none\n";
  return o.str();
}

std::string FrontierTable(const SearchResult& r, const Floor& floor, bool all) {
  std::ostringstream o;
  const bool agreement = floor.kind == Floor::Kind::kAgreement;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%-3s %10s %8s %8s %10s %7s %9s %-5s %s\n", "", "MB/token",
                "rounds", "s/token", agreement ? "agreement" : "ll loss", "+-se",
                agreement ? "ll loss" : "agreement", "floor", "knobs");
  o << buf;
  std::vector<std::size_t> rows;
  if (all) {
    for (std::size_t i = 0; i < r.evaluated.size(); ++i) rows.push_back(i);
  } else {
    rows = r.frontier;
  }
  for (std::size_t i : rows) {
    const Evaluated& e = r.evaluated[i];
    const bool on_frontier = std::find(r.frontier.begin(), r.frontier.end(), i) != r.frontier.end();
    const std::string mark = std::string(i == r.chosen ? "=>" : "  ") + (on_frontier ? "*" : " ");
    std::snprintf(buf, sizeof buf, "%-3s %10.3f %8.1f %8.4f %10.4f %7.4f %9.4f %-5s %s\n",
                  mark.c_str(), e.cost.bytes / 1e6, e.cost.rounds, e.cost.seconds,
                  Accuracy(e, floor), agreement ? e.fidelity.agreement_se : e.fidelity.ll_loss_se,
                  agreement ? e.fidelity.ll_loss : e.fidelity.agreement, e.keeps ? "keeps" : "-",
                  Label(e.policy).c_str());
    o << buf;
  }
  return o.str();
}

Status PlotFrontier(const SearchResult& r, const Floor& floor, Objective objective,
                    const std::string& title, const std::string& png_path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path dir = fs::temp_directory_path(ec) / ("mpcache-tune-" + std::to_string(getpid()));
  fs::create_directories(dir, ec);
  if (ec) return Internal("cannot make a scratch folder for the plot: " + ec.message());
  const double scale = objective == Objective::kBytes ? 1e-6 : 1.0;
  const std::string unit = objective == Objective::kBytes    ? "MB sent per party per token"
                           : objective == Objective::kRounds ? "rounds per token"
                                                             : "predicted seconds per token";
  const auto write = [&](const std::string& name, const std::vector<std::size_t>& rows) {
    std::ofstream f(dir / name);
    for (std::size_t i : rows) {
      f << Value(r.evaluated[i].cost, objective) * scale << " " << Accuracy(r.evaluated[i], floor)
        << "\n";
    }
    return static_cast<bool>(f);
  };
  std::vector<std::size_t> all(r.evaluated.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  if (!write("all.dat", all) || !write("frontier.dat", r.frontier) ||
      !write("chosen.dat", {r.chosen})) {
    fs::remove_all(dir, ec);
    return Internal("cannot write the plot's data in " + dir.string());
  }
  const std::string script = (dir / "plot.gp").string();
  {
    std::ofstream g(script);
    g << "set terminal png size 900,600\n"
      << "set output " << Quoted(png_path) << "\n"
      << "set title " << Quoted(title) << " noenhanced\n"
      << "set xlabel " << Quoted(unit) << "\n"
      << "set ylabel "
      << Quoted(floor.kind == Floor::Kind::kAgreement ? "greedy agreement with the full cache"
                                                      : "log-likelihood loss (nats/token)")
      << "\n"
      << "set key bottom right\nset grid\n"
      << "plot " << Quoted((dir / "all.dat").string())
      << " with points pt 7 ps 1 title 'candidates', " << Quoted((dir / "frontier.dat").string())
      << " with linespoints lw 2 title 'frontier', " << Quoted((dir / "chosen.dat").string())
      << " with points pt 5 ps 2.5 title 'chosen', " << floor.value
      << " with lines dt 2 title 'floor " << floor.ToString() << "'\n";
  }
  const std::string cmd = "gnuplot " + Quoted(script) + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  std::string out;
  if (pipe != nullptr) {
    char buf[256];
    while (std::fgets(buf, sizeof buf, pipe) != nullptr) out += buf;
  }
  const int rc = pipe != nullptr ? pclose(pipe) : -1;
  fs::remove_all(dir, ec);
  if (rc != 0) {
    if (pipe == nullptr || (WIFEXITED(rc) && WEXITSTATUS(rc) == 127)) {
      return NotFound(
          "--plot needs gnuplot: install it (apt-get install gnuplot-nox, or "
          "scripts/install-deps.sh --bench)");
    }
    return Internal("gnuplot failed on the plot (" + png_path + "): " + out);
  }
  if (!fs::exists(png_path, ec)) return Internal("gnuplot wrote no " + png_path);
  return Status::Ok();
}

}  // namespace mpcache::tune
