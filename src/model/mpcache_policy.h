// MPCache's dynamic selection policy (SPEC §6.2), the public side and its plaintext
// arithmetic: ONE copy that the plaintext fixed-point engine (the oracle) and the secure KV
// memory (infer/mpcache_kv.h) both follow, so a secure run selects what its plaintext twin
// selects.
//
// Per layer and step, with L cached positions (the current token included) cut into
// clusters of `cluster_tokens` contiguous positions (C = ceil(L / cluster_tokens)):
//   - cluster 0 (the attention sink) and cluster C - 1 (the newest, possibly partial) are
//     always attended;
//   - the candidates, clusters 1 .. C - 2 (all complete), are scored against the query by
//     their representative r: score_c = sum over every head and feature of q . r_c (one
//     number per cluster, heads summed, so one selection serves all heads);
//   - the `keep` best candidates (keep = ceil(keep_ratio x C) - 2, at least 1, public: it
//     depends only on L) are attended, the others skipped this step.
// The attended positions, in this order: the sink's, the selected clusters' in decreasing
// score (ties to the lower cluster), the newest cluster's. When keep >= candidates every
// position is attended in cache order, exactly as the full cache.
//
// Level 2 (level2_tokens cs2 dividing cs, s = cs / cs2 sub-clusters per cluster): inside the
// `keep` selected clusters, taken in the order above (gathered index j s + u for sub-cluster
// u of the j-th selected cluster), the keep2 sub-clusters of the highest sub-score (q . r
// over the sub-cluster's cs2 keys, heads summed; ties to the lower gathered index) are
// attended instead of whole clusters; keep2 = ceil(level2_keep_ratio x C s) - 2 s (the
// fraction of every sub-cluster of the context, the sink's and newest cluster's counted),
// clamped to 1 .. keep s, public. Level 2 is in effect when it keeps fewer than keep s; then
// the attended positions are the sink's, the keep2 sub-clusters' in decreasing sub-score,
// the newest cluster's.
//
// Residual path (policy residual, accuracy compensation): the candidates the selection skips
// still take part in the attention through their mean key and value, as one virtual token
// of multiplicity cs each. Per layer and step, after the attended positions, m more columns:
//   raw_c = q . kbar_c + ResidualBiasRaw - ResidualMaskRaw x selected_c
// (kbar_c, vbar_c = MeanRow of the cluster's keys and values; ResidualBiasRaw adds ln(cs) to
// the softmax input so the virtual token weighs as its cs tokens would at the mean key;
// ResidualMaskRaw pushes a selected cluster's column below the softmax's exp clip, an exact
// 0 weight, since its tokens are attended themselves), and the mix adds w_c vbar_c. The
// selection is that of level 1 (a cluster gathered at level 1 is never a virtual token).
//
// Representatives, computed once when a cluster completes:
//   kMinMax: r = a x max_t k_t + (256 - a) x min_t k_t per feature, a = round(alpha x 256)
//            (the linearised upper bound  sum q . (alpha r_max + (1 - alpha) r_min)),
//   kMean:   r = sum_t k_t (the mean up to a positive factor: free, no comparison).
// Both are exact integers in the ring (no truncation), and so are the scores (q at f bits
// times r at f + 8 bits): the selection of the secure engine equals the plaintext one
// whenever its q and keys do.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/fixed_point.h"
#include "common/result.h"

namespace mpcache::model {

enum class Representative { kMinMax, kMean };
std::string_view ToString(Representative r);
// What a prompt token's importance sums over the observation window's queries: their softmax
// weights (free: the attention computes them) or the sigmoid of their scaled scores (SPEC
// §6.1's MPC-friendly variant: no max, no division; here one more Sigmoid per observed query).
enum class EvictionScore { kSoftmax, kSigmoid };
std::string_view ToString(EvictionScore e);

struct MpcachePolicy {
  int cluster_tokens = 32;   // level-1 cluster size (tokens)
  double keep_ratio = 0.25;  // fraction of clusters attended per step (sink, newest included)
  // Level-2 sub-clusters (0 or cluster_tokens: one level): their size, a divisor of
  // cluster_tokens, and the fraction of the context's sub-clusters attended.
  int level2_tokens = 0;
  double level2_keep_ratio = 0.2;
  double alpha = 0.6;  // weight of r_max in the min/max representative
  Representative representative = Representative::kMinMax;
  // Adjacent layer pairs share one selection: layers 0 and 1 select for themselves, then
  // layer 2l + 1 reuses the selection of layer 2l (l >= 1).
  bool share_layers = false;
  // Cross-layer score reuse (with share_layers): every selecting layer after the first ranks
  // its own cluster scores plus layer_share_decay times the previous selecting layer's own
  // scores of the same step, own + ((DecayQ() x previous) >> kDecayShift) (one truncation;
  // level 2's sub-scores are not blended); 0 = the selection alone is shared.
  double layer_share_decay = 0.0;
  // Accuracy compensation: the residual path through the skipped clusters' mean key and
  // value (above).
  bool residual = false;
  // Static look-once eviction after the prompt (SPEC §6.1): the fraction of the prompt's
  // tokens kept (1 = no eviction) and the fraction of its last queries that score them.
  double static_keep_ratio = 1.0;
  double observation_window = 0.2;
  EvictionScore eviction_score = EvictionScore::kSoftmax;
  // Accuracy compensation of the eviction (impact re-weighting): every kept prompt row's
  // softmax input is raised by impact_weight x its importance / (W n_heads) (the average
  // weight the window gave it, in [0, 1]), i.e. its weight multiplied by exp(impact_weight x
  // that average) before the softmax's normalisation; 0 = off.
  double impact_weight = 0.0;
  // What the parties learn of each selection (SPEC §6.5): kNone nothing; kPlain the cluster
  // scores and the selection (debugging only); kDp the scores plus the sum of the three
  // parties' Laplace noises of scale dp_sensitivity / dp_epsilon each (in score units,
  // ScoreFracBits below), so the revealed selection is dp_epsilon-DP with respect to score
  // vectors that differ by at most dp_sensitivity in L1, even to two colluding parties.
  config::Reveal reveal = config::Reveal::kNone;
  double dp_epsilon = 1.0;
  double dp_sensitivity = 1.0;

  Status Validate() const;
  bool evicts() const { return static_keep_ratio < 1.0; }
  bool two_levels() const { return level2_tokens > 0 && level2_tokens < cluster_tokens; }
  int subclusters() const { return two_levels() ? cluster_tokens / level2_tokens : 1; }
  bool reveals() const { return reveal != config::Reveal::kNone; }
  // Fractional bits of a raw cluster score (q at f bits times r: f + 8 bits for minmax,
  // f for mean).
  int ScoreFracBits(int frac_bits) const {
    return 2 * frac_bits + (representative == Representative::kMinMax ? 8 : 0);
  }
  int AlphaQ() const;  // round(alpha x 256)
  int DecayQ() const;  // round(layer_share_decay x 2^kDecayShift)
  // Whether `layer`'s ranking adds the previous selecting layer's decayed scores.
  bool BlendsScores(int layer) const {
    return share_layers && DecayQ() > 0 && layer >= 1 && SelectingLayer(layer) == layer;
  }
  // The layer whose selection `layer` attends with.
  int SelectingLayer(int layer) const {
    return share_layers && layer >= 3 && layer % 2 == 1 ? layer - 1 : layer;
  }
};

inline constexpr int kDecayShift = 8;

// The policy a party's `mpcache:` section configures (level-1 clusters; validated there).
MpcachePolicy PolicyFromConfig(const config::MpcacheKnobs& knobs);

// The public shape of one layer's selection at L cached positions.
struct SelectionShape {
  int length = 0;          // L
  int cluster_tokens = 0;  // cs
  int clusters = 0;        // C = ceil(L / cs)
  int candidates = 0;      // C - 2 (0 when C < 3)
  int keep = 0;            // selected candidates (== candidates: no selection)
  int sub_tokens = 0;      // cs2 (== cs: one level)
  int subs = 1;            // s = cs / cs2
  int keep2 = 0;           // sub-clusters attended of the keep s gathered (== keep s: none)
  bool residual = false;   // the residual path's m virtual tokens follow the attended ones
  bool selects() const { return keep < candidates; }
  bool selects2() const { return selects() && keep2 < keep * subs; }
  int gathered_subs() const { return keep * subs; }
  int tail_start() const { return (clusters - 1) * cluster_tokens; }  // newest cluster
  int residual_columns() const { return residual && selects() ? candidates : 0; }
  int attended() const {
    if (!selects()) return length;
    const int middle = selects2() ? keep2 * sub_tokens : keep * cluster_tokens;
    return cluster_tokens + middle + (length - tail_start());
  }
};
SelectionShape ShapeFor(const MpcachePolicy& policy, int length);

// Static eviction of a prompt of n tokens, public (it depends on n and the policy only; the
// number kept is the budget, never a data-dependent count):
//   sink       the first cluster (min(cluster_tokens, n) rows), always kept;
//   window     the last W = max(1, ceil(observation_window x n)) prompt positions: their
//              queries score the other tokens, and they are always kept (the recent window);
//   candidates the m = n - sink - W rows between, scored by importance_t = sum over the
//              window's queries and every head of the softmax weight they give row t (the
//              head average up to the public factor n_heads); the attention's own weights, so
//              scoring costs no communication; with eviction_score kSigmoid instead the
//              sigmoid of the scaled score s = q . k_t / sqrt(head_size) the softmax gets
//              (each query's row scored on its own, not relative to the others);
//   keep       ceil(static_keep_ratio x n) - sink - W candidates (clamped to 0 .. m) with the
//              highest importance (ties to the lower row) stay, the others are gone.
// After eviction a layer holds, in this order: the sink's rows, the kept candidates in
// decreasing importance, the window's rows (KeptRows).
struct EvictionShape {
  int prompt = 0, sink = 0, window = 0, candidates = 0, keep = 0;
  bool evicts() const { return keep < candidates; }
  int observe_from() const { return prompt - window; }  // the first scoring query
  int kept() const { return sink + keep + window; }     // rows left (== prompt if none evicted)
};
EvictionShape EvictionFor(const MpcachePolicy& policy, int prompt_len);
// A KV memory's BeginPrompt: refuses a prompt announced after position 0 or longer than the
// context, naming both.
Status CheckPromptAnnouncement(int prompt_len, int position, int max_seq_len);
// Comparison width that ranks importance sums exactly: they lie in [-W n_heads, W n_heads 2^f]
// (weights at f bits, each within one LSB of [0, 1]).
int ImportanceBits(int frac_bits, const EvictionShape& shape, int n_heads);
// The rows a layer keeps, in the documented order; `selected` are candidate indices (0 = row
// `sink`) from TopKIndices over the candidates' importance.
std::vector<int> KeptRows(const EvictionShape& shape, std::span<const int> selected);

// Impact re-weighting: a kept row's raw-score bias is its importance times this public
// integer, round(impact_weight sqrt(head_size) 2^f / (W n_heads)) (importance at f bits, raw
// scores at 2 f bits before the 1/sqrt(head_size) scaling): exact, local.
Ring64 ImpactMultiplier(const MpcachePolicy& policy, const EvictionShape& shape, int n_heads,
                        int head_size, int frac_bits);

// The residual path's constants in the raw score domain (q . k at 2 frac_bits bits, before
// the 1/sqrt(head_size) scaling): ln(cs), and kResidualMaskScore softmax units.
inline constexpr double kResidualMaskScore = 64;  // far below FixedMath's exp clip (16)
Ring64 ResidualBiasRaw(int cluster_tokens, int head_size, int frac_bits);
Ring64 ResidualMaskRaw(int head_size, int frac_bits);
// The mean of a cluster's rows: sum x MeanMultiplier(cs), truncated by kMeanShift bits
// (exact for cs a power of two).
inline constexpr int kMeanShift = 16;
Ring64 MeanMultiplier(int cluster_tokens);

// The representative of one complete cluster: `rows` keys of kv_dim values (row-major, at
// f bits), kv_dim values out.
std::vector<Ring64> ClusterRepresentative(const MpcachePolicy& policy, const Ring64* keys,
                                          std::size_t rows, std::size_t kv_dim);

// Indices of the k largest scores (read as signed 64-bit integers) in decreasing order,
// ties to the lower index (the secure rank selection's order).
std::vector<int> TopKIndices(std::span<const Ring64> scores, std::size_t k);

// The positions a selecting step attends, in the documented order; `selected` are
// candidate indices (0 = cluster 1) from TopKIndices; with level 2 (shape.selects2())
// `selected2` are gathered sub-cluster indices (j s + u) from TopKIndices over the gathered
// sub-scores.
std::vector<int> AttendedPositions(const SelectionShape& shape, std::span<const int> selected,
                                   std::span<const int> selected2 = {});
// The gathered sub-scores (j s + u) of the selected clusters, from the candidates' sub-scores
// (c s + u).
std::vector<Ring64> GatheredSubScores(const SelectionShape& shape, std::span<const Ring64> sub,
                                      std::span<const int> selected);

}  // namespace mpcache::model
