// mpcache-model accuracy: what MPCache's selection costs in accuracy, measured in the
// plaintext fixed-point engine — the exact twin of the secure engine (same policy code, same
// arithmetic), so the figures hold for MPC runs too.
//
// For every prompt (one per line of --prompts): the full cache generates greedily to --steps
// positions (the reference sequence); then, for every keep ratio, MPCache
//   - teacher-forced on the reference: the share of positions whose greedy token equals the
//     reference's next token (agreement),
//   - free-running: whether its own greedy generation equals the reference, and where it
//     first departs.
// With --text FILE: the mean log-likelihood per token of that text's second half, its first
// half being the prompt (teacher-forced), under the full cache and each MPCache setting.
// --static-keep R < 1 adds the static look-once eviction at the end of every prompt (the
// generations' prompts and the text's first half), --window its observation window;
// --level2 N --level2-keep R adds level-2 sub-clusters of N tokens inside the selected clusters.
#include <cmath>
#include <fstream>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "model/agreement.h"
#include "model/checkpoint.h"
#include "model/fixed_engine.h"
#include "model/tokenizer.h"
#include "tools/model/commands.h"

namespace mpcache::tools {
namespace {

struct AccuracyArgs {
  std::string model, tokenizer, prompts, text;
  int steps = 512;
  std::vector<double> keeps{0.5, 0.25, 0.1};
  int cluster = 32;
  std::string representative = "minmax";
  std::string eviction_score = "softmax";
  bool share_layers = false;
  double share_decay = 0.0;
  double impact_weight = 0.0;
  double alpha = 0.6;
  double static_keep = 1.0;
  double window = 0.2;
  int level2 = 0;
  double level2_keep = 0.2;
  bool residual = false;
  bool json = false;
};

Result<nlohmann::json> Measure(const AccuracyArgs& a) {
  MPCACHE_ASSIGN_OR_RETURN(model::ModelWeights w, model::LoadCheckpoint(a.model));
  MPCACHE_ASSIGN_OR_RETURN(model::Tokenizer tok,
                           model::Tokenizer::LoadLlama2c(a.tokenizer, w.config.vocab_size));
  MPCACHE_ASSIGN_OR_RETURN(std::vector<std::string> prompts, model::ReadPromptLines(a.prompts));
  const int steps = std::min(a.steps, w.config.seq_len);
  const auto engine = [&](std::optional<double> keep) -> Result<model::FixedEngine> {
    model::FixedEngineOptions fo;
    fo.max_seq_len = steps;
    if (keep) {
      model::MpcachePolicy p;
      p.cluster_tokens = a.cluster;
      p.keep_ratio = *keep;
      p.alpha = a.alpha;
      p.representative = a.representative == "mean" ? model::Representative::kMean
                                                    : model::Representative::kMinMax;
      p.static_keep_ratio = a.static_keep;
      p.observation_window = a.window;
      p.eviction_score = a.eviction_score == "sigmoid" ? model::EvictionScore::kSigmoid
                                                       : model::EvictionScore::kSoftmax;
      p.level2_tokens = a.level2;
      p.level2_keep_ratio = a.level2_keep;
      p.residual = a.residual;
      p.share_layers = a.share_layers;
      p.impact_weight = a.impact_weight;
      p.layer_share_decay = a.share_decay;
      MPCACHE_RETURN_IF_ERROR(p.Validate());
      fo.mpcache = p;
    }
    return model::FixedEngine::Create(w, fo);
  };
  struct Tally {
    std::size_t agree = 0, positions = 0, identical = 0;
    double first_departure = 0;  // summed over prompts (reference length when identical)
    double ll = 0;
    int kept_rows = 0;  // layer 0's cached rows after the held-out text (eviction's effect)
  };
  std::vector<Tally> tally(a.keeps.size());
  std::size_t generated = 0;
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    MPCACHE_ASSIGN_OR_RETURN(std::vector<int> prompt, tok.Encode(prompts[i], true, false));
    MPCACHE_ASSIGN_OR_RETURN(model::FixedEngine full, engine(std::nullopt));
    MPCACHE_ASSIGN_OR_RETURN(std::vector<int> ref, model::GreedyGeneration(full, prompt, steps));
    generated += ref.size() - prompt.size();
    for (std::size_t k = 0; k < a.keeps.size(); ++k) {
      MPCACHE_ASSIGN_OR_RETURN(model::FixedEngine forced, engine(a.keeps[k]));
      MPCACHE_ASSIGN_OR_RETURN(std::vector<int> greedy,
                               model::TeacherForced(forced, ref, prompt.size(), nullptr));
      for (std::size_t pos = prompt.size() - 1; pos < greedy.size(); ++pos) {
        tally[k].agree += greedy[pos] == ref[pos + 1];
        ++tally[k].positions;
      }
      MPCACHE_ASSIGN_OR_RETURN(model::FixedEngine free, engine(a.keeps[k]));
      MPCACHE_ASSIGN_OR_RETURN(std::vector<int> own, model::GreedyGeneration(free, prompt, steps));
      std::size_t same = 0;
      while (same < own.size() && same < ref.size() && own[same] == ref[same]) ++same;
      tally[k].identical += own == ref;
      tally[k].first_departure += static_cast<double>(same);
    }
    std::cerr << "\rprompt " << (i + 1) << "/" << prompts.size() << std::flush;
  }
  std::cerr << "\n";
  nlohmann::json j;
  j["model"] = a.model;
  j["prompts"] = prompts.size();
  j["steps"] = steps;
  j["generated_tokens"] = generated;
  j["cluster_tokens"] = a.cluster;
  j["representative"] = a.representative;
  j["alpha"] = a.alpha;
  j["static_keep_ratio"] = a.static_keep;
  j["observation_window"] = a.window;
  j["eviction_score"] = a.eviction_score;
  j["level2_cluster_tokens"] = a.level2;
  j["level2_keep_ratio"] = a.level2_keep;
  j["residual_path"] = a.residual;
  j["share_layers"] = a.share_layers;
  j["impact_weight"] = a.impact_weight;
  j["layer_share_decay"] = a.share_decay;
  double full_ll = 0;
  std::size_t text_tokens = 0;
  if (!a.text.empty()) {
    std::ifstream in(a.text);
    if (!in) return NotFound("cannot read the held-out text " + a.text);
    std::stringstream ss;
    ss << in.rdbuf();
    MPCACHE_ASSIGN_OR_RETURN(std::vector<int> text, tok.Encode(ss.str(), true, false));
    if (static_cast<int>(text.size()) > steps) text.resize(static_cast<std::size_t>(steps));
    if (text.size() < 4) return InvalidArgument(a.text + " holds fewer than 4 tokens");
    const std::size_t half = text.size() / 2;
    text_tokens = text.size() - half;
    MPCACHE_ASSIGN_OR_RETURN(model::FixedEngine full, engine(std::nullopt));
    if (auto r = model::TeacherForced(full, text, half, &full_ll); !r.ok()) return r.error();
    for (std::size_t k = 0; k < a.keeps.size(); ++k) {
      MPCACHE_ASSIGN_OR_RETURN(model::FixedEngine e, engine(a.keeps[k]));
      if (auto r = model::TeacherForced(e, text, half, &tally[k].ll); !r.ok()) return r.error();
      if (!e.Attended().empty()) tally[k].kept_rows = e.kv_layout().length(0);
    }
    j["text_tokens"] = text_tokens;
    j["text_prompt_tokens"] = half;
    j["full_mean_log_likelihood"] = full_ll / static_cast<double>(text_tokens);
  }
  nlohmann::json rows = nlohmann::json::array();
  for (std::size_t k = 0; k < a.keeps.size(); ++k) {
    const Tally& t = tally[k];
    nlohmann::json r;
    r["keep_ratio"] = a.keeps[k];
    r["agreement"] = t.positions ? static_cast<double>(t.agree) / t.positions : 1.0;
    r["identical_generations"] = t.identical;
    r["mean_first_departure"] = t.first_departure / static_cast<double>(prompts.size());
    if (text_tokens > 0) {
      r["mean_log_likelihood"] = t.ll / static_cast<double>(text_tokens);
      r["text_cached_rows"] = t.kept_rows;
    }
    rows.push_back(r);
  }
  j["mpcache"] = rows;
  return j;
}

}  // namespace

void AddAccuracyCommand(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<AccuracyArgs>();
  auto* cmd = app.add_subcommand(
      "accuracy",
      "MPCache vs the full cache in the fixed-point engine (the secure engine's twin): greedy "
      "agreement over long generations and log-likelihood of held-out text");
  cmd->add_option("--model", a->model, "Checkpoint (llama2.c .bin or GGUF)")->required();
  cmd->add_option("--tokenizer", a->tokenizer, "llama2.c tokenizer.bin")->required();
  cmd->add_option("--prompts", a->prompts, "Prompts, one per line (# starts a comment)")
      ->required();
  cmd->add_option("--text", a->text, "Held-out text for the log-likelihood");
  cmd->add_option("--steps", a->steps, "Positions per generation, prompt included")
      ->check(CLI::Range(2, 1 << 20))
      ->capture_default_str();
  cmd->add_option("--keep", a->keeps, "MPCache keep ratios to compare, e.g. 0.5,0.25,0.1")
      ->delimiter(',')
      ->check(CLI::Range(0.001, 1.0));
  cmd->add_option("--cluster", a->cluster, "Tokens per cluster")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd->add_option("--representative", a->representative, "minmax or mean")
      ->check(CLI::IsMember({"minmax", "mean"}));
  cmd->add_option("--alpha", a->alpha, "Weight of r_max in the representative")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--static-keep", a->static_keep,
                  "Fraction of each prompt kept by the static eviction (1 = none)")
      ->check(CLI::Range(0.001, 1.0))
      ->capture_default_str();
  cmd->add_option("--level2", a->level2,
                  "Tokens per level-2 sub-cluster, a divisor of --cluster (0 = one level)")
      ->check(CLI::Range(0, 4096))
      ->capture_default_str();
  cmd->add_option("--level2-keep", a->level2_keep,
                  "Fraction of the context's sub-clusters attended (level 2)")
      ->check(CLI::Range(0.001, 1.0))
      ->capture_default_str();
  cmd->add_option("--window", a->window, "Observation window of the eviction (prompt fraction)")
      ->check(CLI::Range(0.001, 1.0))
      ->capture_default_str();
  cmd->add_option("--eviction-score", a->eviction_score,
                  "What scores the prompt for the eviction: softmax or sigmoid")
      ->check(CLI::IsMember({"softmax", "sigmoid"}))
      ->capture_default_str();
  cmd->add_option("--impact-weight", a->impact_weight,
                  "Impact re-weighting of the evicted prompt's kept rows (0 = off)")
      ->check(CLI::Range(0.0, 16.0))
      ->capture_default_str();
  cmd->add_flag("--share-layers", a->share_layers,
                "Layer 2l+1 reuses layer 2l's selection (l >= 1)");
  cmd->add_option("--share-decay", a->share_decay,
                  "With --share-layers: weight of the previous selecting layer's scores")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_flag("--residual", a->residual,
                "Residual path: skipped clusters attended through their mean key and value");
  cmd->add_flag("--json", a->json, "Print one JSON object on stdout");
  cmd->callback([a, exit_code] {
    Result<nlohmann::json> j = Measure(*a);
    if (!j.ok()) {
      std::cerr << "mpcache-model accuracy: " << j.error().ToString() << "\n";
      *exit_code = 1;
      return;
    }
    if (a->json) {
      std::cout << j->dump() << "\n";
      return;
    }
    std::cout << "prompts " << (*j)["prompts"] << ", " << (*j)["steps"]
              << " positions each, clusters of " << a->cluster << " (" << a->representative
              << ")\n";
    if (j->contains("full_mean_log_likelihood")) {
      std::cout << "full cache: mean log-likelihood " << (*j)["full_mean_log_likelihood"]
                << " over the text's last " << (*j)["text_tokens"] << " tokens\n";
    }
    for (const auto& r : (*j)["mpcache"]) {
      std::cout << "keep " << r["keep_ratio"] << ": agreement " << r["agreement"]
                << ", identical generations " << r["identical_generations"]
                << ", mean first departure " << r["mean_first_departure"];
      if (r.contains("mean_log_likelihood")) {
        std::cout << ", mean log-likelihood " << r["mean_log_likelihood"];
      }
      std::cout << "\n";
    }
  });
}

}  // namespace mpcache::tools
