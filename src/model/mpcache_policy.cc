#include "model/mpcache_policy.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace mpcache::model {

std::string_view ToString(Representative r) {
  return r == Representative::kMinMax ? "minmax" : "mean";
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
  if (!(alpha >= 0 && alpha <= 1)) {
    return InvalidArgument("MPCache alpha " + std::to_string(alpha) + " must be in [0, 1]");
  }
  return Status::Ok();
}

MpcachePolicy PolicyFromConfig(const config::MpcacheKnobs& knobs) {
  MpcachePolicy p;
  p.cluster_tokens = knobs.level1_cluster_tokens;
  p.keep_ratio = knobs.level1_keep_ratio;
  p.alpha = knobs.alpha;
  p.representative = knobs.mean_representative ? Representative::kMean : Representative::kMinMax;
  p.share_layers = knobs.share_layers;
  return p;
}

int MpcachePolicy::AlphaQ() const {
  return static_cast<int>(std::lround(alpha * 256));
}

SelectionShape ShapeFor(const MpcachePolicy& policy, int length) {
  SelectionShape s;
  s.length = length;
  s.cluster_tokens = policy.cluster_tokens;
  s.clusters = (length + policy.cluster_tokens - 1) / policy.cluster_tokens;
  s.candidates = std::max(0, s.clusters - 2);
  const auto wanted = static_cast<int>(std::ceil(policy.keep_ratio * s.clusters - 1e-9)) - 2;
  s.keep = s.candidates == 0 ? 0 : std::clamp(wanted, 1, s.candidates);
  return s;
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

std::vector<int> AttendedPositions(const SelectionShape& shape, std::span<const int> selected) {
  std::vector<int> out;
  if (!shape.selects()) {
    out.resize(static_cast<std::size_t>(shape.length));
    std::iota(out.begin(), out.end(), 0);
    return out;
  }
  const int cs = shape.cluster_tokens;
  for (int t = 0; t < cs; ++t) out.push_back(t);
  for (const int c : selected) {
    for (int t = 0; t < cs; ++t) out.push_back((c + 1) * cs + t);
  }
  for (int t = shape.tail_start(); t < shape.length; ++t) out.push_back(t);
  return out;
}

}  // namespace mpcache::model
