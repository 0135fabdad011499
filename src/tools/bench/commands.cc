#include "tools/bench/commands.h"

#include <algorithm>
#include <iostream>
#include <numeric>
#include <vector>

namespace mpcache::tools {

std::size_t MedianRun(std::span<const double> seconds) {
  std::vector<std::size_t> order(seconds.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return seconds[a] < seconds[b]; });
  return order[order.size() / 2];
}

int EmitJsonOrError(const Result<nlohmann::json>& result, bool json) {
  if (!result.ok()) {
    std::cerr << "error: " << result.error().ToString() << "\n";
    return 1;
  }
  if (!json) return -1;
  std::cout << result->dump() << "\n";
  return 0;
}

Result<std::optional<model::MpcachePolicy>> CacheFlags::Policy() const {
  if (cache == "full") {
    if (knobs_given) {
      return InvalidArgument(
          "--cluster, --keep, --alpha, --representative, --share-layers, --share-decay, "
          "--static-keep, "
          "--window, --eviction-score, --impact-weight, --reveal, --dp-epsilon and "
          "--dp-sensitivity are MPCache's "
          "knobs: add --cache mpcache (the full cache has none)");
    }
    return std::optional<model::MpcachePolicy>();
  }
  model::MpcachePolicy p = policy;
  p.representative =
      representative == "mean" ? model::Representative::kMean : model::Representative::kMinMax;
  p.eviction_score =
      eviction_score == "sigmoid" ? model::EvictionScore::kSigmoid : model::EvictionScore::kSoftmax;
  p.reveal = reveal == "dp"      ? config::Reveal::kDp
             : reveal == "plain" ? config::Reveal::kPlain
                                 : config::Reveal::kNone;
  MPCACHE_RETURN_IF_ERROR(p.Validate());
  return std::optional<model::MpcachePolicy>(p);
}

nlohmann::json CacheFlags::Describe() const {
  nlohmann::json j;
  j["mode"] = cache;
  if (cache == "mpcache") {
    j["cluster_tokens"] = policy.cluster_tokens;
    j["keep_ratio"] = policy.keep_ratio;
    j["alpha"] = policy.alpha;
    j["representative"] = representative;
    j["share_layers"] = policy.share_layers;
    j["layer_share_decay"] = policy.layer_share_decay;
    j["residual_path"] = policy.residual;
    if (policy.two_levels()) {
      j["level2_cluster_tokens"] = policy.level2_tokens;
      j["level2_keep_ratio"] = policy.level2_keep_ratio;
    }
    j["static_keep_ratio"] = policy.static_keep_ratio;
    j["observation_window"] = policy.observation_window;
    j["eviction_score"] = eviction_score;
    j["impact_weight"] = policy.impact_weight;
    j["reveal"] = reveal;
    if (reveal == "dp") {
      j["dp_epsilon"] = policy.dp_epsilon;
      j["dp_sensitivity"] = policy.dp_sensitivity;
    }
  }
  return j;
}

void AddCacheFlags(CLI::App& cmd, CacheFlags& f) {
  cmd.add_option("--cache", f.cache, "KV cache: full, or mpcache (dynamic cluster selection)")
      ->check(CLI::IsMember({"full", "mpcache"}));
  const auto given = [&f](auto&&...) { f.knobs_given = true; };
  cmd.add_option("--cluster", f.policy.cluster_tokens, "MPCache: tokens per cluster")
      ->check(CLI::Range(1, 4096))
      ->each(given);
  cmd.add_option("--keep", f.policy.keep_ratio,
                 "MPCache: fraction of clusters attended per step, sink and newest included")
      ->check(CLI::Range(0.0, 1.0))
      ->each(given);
  cmd.add_option("--level2", f.policy.level2_tokens,
                 "MPCache: tokens per level-2 sub-cluster, a divisor of --cluster (0 = one level)")
      ->check(CLI::Range(0, 4096))
      ->each(given);
  cmd.add_option("--level2-keep", f.policy.level2_keep_ratio,
                 "MPCache: fraction of the context's sub-clusters attended (level 2)")
      ->check(CLI::Range(0.0, 1.0))
      ->each(given);
  cmd.add_option("--alpha", f.policy.alpha, "MPCache: weight of r_max in the representative")
      ->check(CLI::Range(0.0, 1.0))
      ->each(given);
  cmd.add_option("--representative", f.representative, "MPCache: minmax or mean")
      ->check(CLI::IsMember({"minmax", "mean"}))
      ->each(given);
  cmd.add_flag("--share-layers", f.policy.share_layers,
               "MPCache: layer 2l+1 reuses layer 2l's selection (l >= 1)")
      ->each(given);
  cmd.add_option("--share-decay", f.policy.layer_share_decay,
                 "MPCache: with --share-layers, weight of the previous selecting layer's scores "
                 "in each selecting layer's ranking (0 = the selection alone is shared)")
      ->check(CLI::Range(0.0, 1.0))
      ->each(given);
  cmd.add_flag("--residual", f.policy.residual,
               "MPCache: skipped clusters attended through their mean key and value")
      ->each(given);
  cmd.add_option("--static-keep", f.policy.static_keep_ratio,
                 "MPCache: fraction of the prompt kept by the look-once eviction (1 = none)")
      ->check(CLI::Range(0.0, 1.0))
      ->each(given);
  cmd.add_option("--impact-weight", f.policy.impact_weight,
                 "MPCache: kept prompt rows' softmax inputs raised by this x their eviction "
                 "importance (0 = off)")
      ->check(CLI::Range(0.0, 16.0))
      ->each(given);
  cmd.add_option("--eviction-score", f.eviction_score,
                 "MPCache: what scores the prompt for the eviction: softmax (the attention's "
                 "weights) or sigmoid (of the scaled scores)")
      ->check(CLI::IsMember({"softmax", "sigmoid"}))
      ->each(given);
  cmd.add_option("--reveal", f.reveal,
                 "MPCache: what the parties learn of a selection: none, dp (noisy scores) or "
                 "plain (debugging)")
      ->check(CLI::IsMember({"none", "dp", "plain"}))
      ->each(given);
  cmd.add_option("--dp-epsilon", f.policy.dp_epsilon, "MPCache reveal dp: epsilon per selection")
      ->check(CLI::PositiveNumber)
      ->each(given);
  cmd.add_option("--dp-sensitivity", f.policy.dp_sensitivity,
                 "MPCache reveal dp: L1 bound of a selection's score change (score units)")
      ->check(CLI::PositiveNumber)
      ->each(given);
  cmd.add_option("--window", f.policy.observation_window,
                 "MPCache: the eviction's observation window (fraction of the prompt)")
      ->check(CLI::Range(0.0, 1.0))
      ->each(given);
}

}  // namespace mpcache::tools
