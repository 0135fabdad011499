#include "model/mpcache_policy.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace mpcache::model {

std::string_view ToString(Representative r) {
  return r == Representative::kMinMax ? "minmax" : "mean";
}

std::string_view ToString(EvictionScore e) {
  return e == EvictionScore::kSoftmax ? "softmax" : "sigmoid";
}

Status MpcachePolicy::Validate() const {
  if (cluster_tokens < 1 || cluster_tokens > 4096) {
    return InvalidArgument("MPCache cluster size " + std::to_string(cluster_tokens) +
                           " must be 1 .. 4096 tokens (level1_cluster_tokens)");
  }
  if (!(keep_ratio > 0 && keep_ratio <= 1)) {
    return InvalidArgument("MPCache keep ratio " + std::to_string(keep_ratio) +
                           " must be in (0, 1] (level1_keep_ratio)");
  }
  if (!(impact_weight >= 0 && impact_weight <= 16)) {
    return InvalidArgument("MPCache impact weight " + std::to_string(impact_weight) +
                           " must be in [0, 16] (impact_weight; 0 = off)");
  }
  if (!(layer_share_decay >= 0 && layer_share_decay <= 1)) {
    return InvalidArgument("MPCache cross-layer decay " + std::to_string(layer_share_decay) +
                           " must be in [0, 1] (layer_share_decay; 0 = no score reuse)");
  }
  if (!(static_keep_ratio > 0 && static_keep_ratio <= 1)) {
    return InvalidArgument("MPCache static keep ratio " + std::to_string(static_keep_ratio) +
                           " must be in (0, 1] (static_keep_ratio; 1 = no eviction)");
  }
  if (!(observation_window > 0 && observation_window <= 1)) {
    return InvalidArgument("MPCache observation window " + std::to_string(observation_window) +
                           " must be in (0, 1] of the prompt (observation_window)");
  }
  if (reveal == config::Reveal::kDp && !(dp_epsilon > 0 && dp_sensitivity > 0)) {
    return InvalidArgument("MPCache reveal: dp needs dp_epsilon > 0 and dp_sensitivity > 0 (got " +
                           std::to_string(dp_epsilon) + " and " + std::to_string(dp_sensitivity) +
                           ")");
  }
  if (level2_tokens < 0 || (level2_tokens > 0 && cluster_tokens % level2_tokens != 0)) {
    return InvalidArgument(
        "MPCache level-2 sub-clusters of " + std::to_string(level2_tokens) +
        " tokens must divide the clusters of " + std::to_string(cluster_tokens) +
        " (level2_cluster_tokens; equal to level1_cluster_tokens for one level)");
  }
  if (two_levels() && !(level2_keep_ratio > 0 && level2_keep_ratio <= 1)) {
    return InvalidArgument("MPCache level-2 keep ratio " + std::to_string(level2_keep_ratio) +
                           " must be in (0, 1] (level2_keep_ratio)");
  }
  if (!(alpha >= 0 && alpha <= 1)) {
    return InvalidArgument("MPCache alpha " + std::to_string(alpha) + " must be in [0, 1]");
  }
  return Status::Ok();
}

MpcachePolicy PolicyFromConfig(const config::MpcacheKnobs& knobs) {
  MpcachePolicy p;
  p.cluster_tokens = knobs.level1_cluster_tokens;
  p.keep_ratio = knobs.level1_keep_ratio;
  p.level2_tokens = knobs.level2_cluster_tokens;
  p.level2_keep_ratio = knobs.level2_keep_ratio;
  p.alpha = knobs.alpha;
  p.representative = knobs.mean_representative ? Representative::kMean : Representative::kMinMax;
  p.share_layers = knobs.share_layers;
  p.layer_share_decay = knobs.layer_share_decay;
  p.residual = knobs.residual_path;
  p.static_keep_ratio = knobs.static_keep_ratio;
  p.observation_window = knobs.observation_window;
  p.impact_weight = knobs.impact_weight;
  p.eviction_score = knobs.sigmoid_eviction ? EvictionScore::kSigmoid : EvictionScore::kSoftmax;
  p.reveal = knobs.reveal;
  p.dp_epsilon = knobs.dp_epsilon;
  p.dp_sensitivity = knobs.dp_sensitivity;
  return p;
}

int MpcachePolicy::AlphaQ() const {
  return static_cast<int>(std::lround(alpha * 256));
}

int MpcachePolicy::DecayQ() const {
  return static_cast<int>(std::lround(std::ldexp(layer_share_decay, kDecayShift)));
}

SelectionShape ShapeFor(const MpcachePolicy& policy, int length) {
  SelectionShape s;
  s.length = length;
  s.cluster_tokens = policy.cluster_tokens;
  s.clusters = (length + policy.cluster_tokens - 1) / policy.cluster_tokens;
  s.candidates = std::max(0, s.clusters - 2);
  const auto wanted = static_cast<int>(std::ceil(policy.keep_ratio * s.clusters - 1e-9)) - 2;
  s.keep = s.candidates == 0 ? 0 : std::clamp(wanted, 1, s.candidates);
  s.residual = policy.residual;
  s.subs = policy.subclusters();
  s.sub_tokens = policy.cluster_tokens / s.subs;
  s.keep2 = s.keep * s.subs;
  if (policy.two_levels() && s.keep > 0) {
    const auto wanted2 =
        static_cast<int>(std::ceil(policy.level2_keep_ratio * s.clusters * s.subs - 1e-9)) -
        2 * s.subs;
    s.keep2 = std::clamp(wanted2, 1, s.keep * s.subs);
  }
  return s;
}

EvictionShape EvictionFor(const MpcachePolicy& policy, int prompt_len) {
  EvictionShape s;
  s.prompt = std::max(0, prompt_len);
  s.sink = std::min(policy.cluster_tokens, s.prompt);
  const auto w = static_cast<int>(std::ceil(policy.observation_window * s.prompt - 1e-9));
  s.window = std::min(s.prompt - s.sink, std::max(1, w));
  s.candidates = s.prompt - s.sink - s.window;
  if (!policy.evicts()) {
    s.keep = s.candidates;
    return s;
  }
  const auto budget = static_cast<int>(std::ceil(policy.static_keep_ratio * s.prompt - 1e-9));
  s.keep = std::clamp(budget - s.sink - s.window, 0, s.candidates);
  return s;
}

Status CheckPromptAnnouncement(int prompt_len, int position, int max_seq_len) {
  if (prompt_len < 1 || prompt_len > max_seq_len || position != 0) {
    return InvalidArgument("a prompt of " + std::to_string(prompt_len) +
                           " tokens, announced at position " + std::to_string(position) +
                           " (announce it before position 0, within the context of " +
                           std::to_string(max_seq_len) + ")");
  }
  return Status::Ok();
}

int ImportanceBits(int frac_bits, const EvictionShape& shape, int n_heads) {
  // |a - b| <= W nh (2^f + 1) < 2^(bits - 1).
  const auto bound = static_cast<std::uint64_t>(std::max(1, shape.window)) *
                     static_cast<std::uint64_t>(std::max(1, n_heads));
  int log = 0;
  while ((std::uint64_t{1} << log) < bound) ++log;
  return std::min(64, frac_bits + log + 2);
}

std::vector<int> KeptRows(const EvictionShape& shape, std::span<const int> selected) {
  std::vector<int> out;
  out.reserve(static_cast<std::size_t>(shape.prompt));
  for (int t = 0; t < shape.sink; ++t) out.push_back(t);
  if (!shape.evicts()) {
    for (int c = 0; c < shape.candidates; ++c) out.push_back(shape.sink + c);
  } else {
    for (const int c : selected) out.push_back(shape.sink + c);
  }
  for (int t = shape.observe_from(); t < shape.prompt; ++t) out.push_back(t);
  return out;
}

namespace {
Ring64 RawScoreConstant(double softmax_units, int head_size, int frac_bits) {
  const double raw =
      softmax_units * std::sqrt(static_cast<double>(head_size)) * std::ldexp(1.0, 2 * frac_bits);
  return static_cast<Ring64>(std::llround(raw));
}
}  // namespace

Ring64 ResidualBiasRaw(int cluster_tokens, int head_size, int frac_bits) {
  return RawScoreConstant(std::log(static_cast<double>(cluster_tokens)), head_size, frac_bits);
}
Ring64 ResidualMaskRaw(int head_size, int frac_bits) {
  return RawScoreConstant(kResidualMaskScore, head_size, frac_bits);
}
Ring64 ImpactMultiplier(const MpcachePolicy& policy, const EvictionShape& shape, int n_heads,
                        int head_size, int frac_bits) {
  const double per = static_cast<double>(std::max(1, shape.window)) * std::max(1, n_heads);
  return static_cast<Ring64>(
      std::llround(policy.impact_weight * std::sqrt(head_size) * std::ldexp(1.0, frac_bits) / per));
}
Ring64 MeanMultiplier(int cluster_tokens) {
  return static_cast<Ring64>(
      std::llround(std::ldexp(1.0, kMeanShift) / static_cast<double>(cluster_tokens)));
}

std::vector<Ring64> ClusterRepresentative(const MpcachePolicy& policy, const Ring64* keys,
                                          std::size_t rows, std::size_t kv_dim) {
  std::vector<Ring64> rep(kv_dim, 0);
  if (policy.representative == Representative::kMean) {
    for (std::size_t t = 0; t < rows; ++t) {
      for (std::size_t i = 0; i < kv_dim; ++i) rep[i] += keys[t * kv_dim + i];
    }
    return rep;
  }
  const auto a = static_cast<Ring64>(policy.AlphaQ());
  for (std::size_t i = 0; i < kv_dim; ++i) {
    auto hi = static_cast<std::int64_t>(keys[i]), lo = hi;
    for (std::size_t t = 1; t < rows; ++t) {
      const auto v = static_cast<std::int64_t>(keys[t * kv_dim + i]);
      hi = std::max(hi, v);
      lo = std::min(lo, v);
    }
    rep[i] = a * static_cast<Ring64>(hi) + (256 - a) * static_cast<Ring64>(lo);
  }
  return rep;
}

std::vector<int> TopKIndices(std::span<const Ring64> scores, std::size_t k) {
  std::vector<int> idx(scores.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) {
    return static_cast<std::int64_t>(scores[static_cast<std::size_t>(a)]) >
           static_cast<std::int64_t>(scores[static_cast<std::size_t>(b)]);
  });
  idx.resize(std::min(k, idx.size()));
  return idx;
}

std::vector<int> AttendedPositions(const SelectionShape& shape, std::span<const int> selected,
                                   std::span<const int> selected2) {
  std::vector<int> out;
  if (!shape.selects()) {
    out.resize(static_cast<std::size_t>(shape.length));
    std::iota(out.begin(), out.end(), 0);
    return out;
  }
  const int cs = shape.cluster_tokens;
  for (int t = 0; t < cs; ++t) out.push_back(t);
  if (shape.selects2()) {
    const int cs2 = shape.sub_tokens;
    for (const int g : selected2) {
      const int c = selected[static_cast<std::size_t>(g / shape.subs)];
      const int first = (c + 1) * cs + (g % shape.subs) * cs2;
      for (int t = 0; t < cs2; ++t) out.push_back(first + t);
    }
  } else {
    for (const int c : selected) {
      for (int t = 0; t < cs; ++t) out.push_back((c + 1) * cs + t);
    }
  }
  for (int t = shape.tail_start(); t < shape.length; ++t) out.push_back(t);
  return out;
}

std::vector<Ring64> GatheredSubScores(const SelectionShape& shape, std::span<const Ring64> sub,
                                      std::span<const int> selected) {
  const auto s = static_cast<std::size_t>(shape.subs);
  std::vector<Ring64> out;
  out.reserve(selected.size() * s);
  for (const int c : selected) {
    for (std::size_t u = 0; u < s; ++u) out.push_back(sub[static_cast<std::size_t>(c) * s + u]);
  }
  return out;
}

}  // namespace mpcache::model
