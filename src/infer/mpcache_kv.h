// MPCache under MPC: the full cache's blocks (infer/kv_cache.h) plus the dynamic cluster
// selection of model/mpcache_policy.h, all on secret shares. The selection is never
// opened (reveal: none): every size below follows from L and the policy, so no party's
// view and no dealer request depends on which clusters were chosen.
//
// Per selecting layer and step, with C clusters, m = C - 2 candidates, k kept (public):
//   representatives  once per completed cluster: per feature max and -min over its keys
//                    (RowMax, 2 kv_dim rows of cluster_tokens values), combined locally,
//                    appended to representative blocks under their own fixed masks
//                    (opens kv_dim values); the mean representative needs no comparison;
//   scores           ONE product opens q once for the key blocks AND the representative
//                    blocks: n_heads x (L + m) raw scores; cluster scores summed locally;
//   rank             RowRankSelection(m scores, k, 64 bits): the secret one-hot S (k x m);
//   gather           S masked once (k m values), then S x M with M the m candidates'
//                    raw scores (m x n_heads cs): opens m n_heads cs values;
//   softmax          over n_heads x (cs (1 + k) + tail) values only (the caller);
//   scatter          P^T S (P: the k gathered clusters' weights): opens k n_heads cs;
//   mix              the full cache's product over every value block, the unselected
//                    positions weighted by an exact secret 0.
// Rounds added per selecting layer: LtzRounds(64) + LtzRounds(RankBits(m)) + 3 (plus, when
// a cluster completes, RowMax's and one append round); a sharing layer (policy
// share_layers) reuses its partner's S: gather and scatter only. With layer_share_decay > 0
// every selecting layer after the first adds the previous selecting layer's m cluster scores
// times DecayQ, truncated by kDecayShift: 1 round, m values opened.
//
// Level 2 (policy two_levels(): sub-clusters of cs2 tokens, s = cs / cs2 per cluster, k2 of
// the g = k s gathered sub-clusters attended, all public):
//   representatives  each sub-cluster's too (minmax: RowMax over its cs2 keys, then the
//                    cluster's over its s sub-clusters' max and -min, so the comparisons are
//                    not repeated), in their own blocks (m s rows), appended in the same round;
//   scores           the same opening of q scores them: n_heads x (L + m + m s);
//   gather           S x [M | Z] with Z the candidates' sub-scores (m x s): the k gathered
//                    clusters' token scores and sub-scores in the one product;
//   rank 2           RowRankSelection(g gathered sub-scores, k2, 64 bits): S2 (k2 x g),
//                    masked once (k2 g values);
//   gather 2         S2 x M2 (M2: the gathered clusters' token scores by sub-cluster,
//                    g x n_heads cs2): opens g n_heads cs2 values;
//   softmax          over n_heads x (cs + k2 cs2 + tail) values;
//   scatter          W2^T S2 (opens n_heads cs2 k2), then W^T S as above.
// Rounds added to level 1's: LtzRounds(64) + LtzRounds(RankBits(g)) + 2 in Scores, 1 in Mix.
//
// Residual path (policy residual; model/mpcache_policy.h): once per completed cluster, at
// every layer, the mean key and value (sum x MeanMultiplier, truncated: 1 round; appended to
// their own key-side and value-side blocks: 1 round, opens 2 kv_dim values). Per step the
// m mean keys are scored in the same opening of q (n_heads x m more columns, shifted by the
// public ln(cs) bias and, for the selected clusters, by -ResidualMaskRaw times the column
// sums of S: local), and the m mean values mixed in the same product as the value blocks
// (the opening of the weights grows by n_heads m). No round is added per step.
//
// Static eviction (policy static_keep_ratio < 1; model::EvictionFor's shape, public): while
// the prompt's last W queries run, Mix adds each row's softmax weights (summed over heads)
// to the layer's secret importance (local, free). eviction_score sigmoid adds instead the
// Sigmoid of the scaled scores, which the engine computes (Sigmoid's rounds per observed
// query and layer) and passes by ObserveScores; when that query selects, they are scattered
// back to cache order in the same products as the weights (2 n_heads rows instead of n_heads:
// the scatter's openings double for those queries). At EndPrefill, for all layers together:
//   rank        RowRankSelection(n_layers rows of m importances, keep, ImportanceBits):
//               the secret one-hot E_l (keep x m) per layer, in one batch;
//   compact     per layer E_l x [K | V] of the candidates (m x 2 kv_dim): 1 round, opens
//               keep m + 2 m kv_dim values;
//   reload      the kept rows (sink, E_l's rows, window) appended under fresh block masks:
//               1 round per layer, opens 2 kept kv_dim values; the old blocks are dropped;
//   representatives of the new clusters (as above).
// Rounds: LtzRounds(ImportanceBits) + LtzRounds(RankBits(m)) + 2 n_layers (+ the
// representatives'); nothing about which rows stayed is opened. Impact re-weighting
// (impact_weight > 0): the compaction gathers [K | V | importance] (m more values opened per
// layer), and every later Scores adds the kept rows' importance x ImpactMultiplier to their
// raw scores (local).
//
// reveal: plain | dp (policy.reveal): the m cluster scores (and with level 2 the m s
// sub-scores, in the same opening: two selections) are opened instead of ranked —
// dp first adds the sum of every party's own Laplace noise (InputSum, 1 round: each party
// inputs m noise values of scale dp_sensitivity / dp_epsilon in score units), and in
// malicious mode everything opened so far is MAC-checked (3 rounds) before the revealed
// selection is acted on; the selection is then public (TopKIndices of the opened scores),
// so gather and scatter are local copies. Rounds per selecting layer: 1 (+1 dp) + 1 open
// (+3 malicious) instead of the rank's and the three products'. Every revealed selection
// under dp spends dp_epsilon (basic composition: epsilon_spent()).
#pragma once

#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "infer/kv_cache.h"
#include "model/mpcache_policy.h"
#include "mpc/compare/binary_context.h"
#include "mpc/matmul.h"

namespace mpcache::infer {

template <typename P>
class MpcacheKv final : public KvMemory<P> {
 public:
  // `ctx` (whose arithmetic context every call gets) must outlive the memory; compare_bits:
  // the width of the key comparisons of the min/max representatives.
  static Result<std::unique_ptr<MpcacheKv>> Create(mpc::BinaryContext<P>& ctx,
                                                   const model::ModelConfig& config,
                                                   int max_seq_len, int block_tokens,
                                                   const model::MpcachePolicy& policy,
                                                   int compare_bits, int frac_bits);

  const model::KvLayout& layout() const override { return full_->layout(); }
  const model::MpcachePolicy& policy() const { return policy_; }

  Result<std::vector<mpc::AttentionShape>> Prepare(mpc::Context<P>& ctx) override;
  Status Append(mpc::Context<P>& ctx, int layer, mpc::Shares<P> k, mpc::Shares<P> v) override {
    return full_->Append(ctx, layer, std::move(k), std::move(v));
  }
  // n_heads x attended raw scores (model::AttendedPositions' order, selection secret).
  Result<mpc::Shares<P>> Scores(mpc::Context<P>& ctx, int layer, const model::KvPlan& plan,
                                const mpc::Shares<P>& q) override;
  // weights: n_heads x (attended + residual columns), as Scores returned them.
  Result<mpc::Shares<P>> Mix(mpc::Context<P>& ctx, int layer, const model::KvPlan& plan,
                             const mpc::Shares<P>& probs) override;
  // With static eviction: the prompt's length fixes the eviction's public shape.
  Status BeginPrompt(int prompt_len) override;
  // eviction_score sigmoid: true for the observation window's queries; their sigmoids
  // (n_heads x (attended + residual columns)) then score the prompt in the next Mix of `layer`.
  bool ObservesScores(int layer) const override {
    return policy_.eviction_score == model::EvictionScore::kSigmoid &&
           Observing(layout().length(layer));
  }
  Status ObserveScores(int layer, mpc::Shares<P> sigmoid) override {
    observed_.emplace(layer, std::move(sigmoid));
    return Status::Ok();
  }
  // Evicts (static eviction), then computes the representatives the next step will score
  // (a long context's clusters in bulk, not in that step).
  Status EndPrefill(mpc::Context<P>& ctx, int window) override;
  // Selections revealed to the parties so far (reveal: plain | dp) and the privacy budget
  // they spent (dp: dp_epsilon each; 0 otherwise).
  std::uint64_t revealed_selections() const override { return revealed_; }
  double epsilon_spent() const override {
    return policy_.reveal == config::Reveal::kDp
               ? policy_.dp_epsilon * static_cast<double>(revealed_)
               : 0.0;
  }
  // Tests: this party's own noise and the opened (noisy) scores of the last revealed
  // selection.
  const std::vector<std::uint64_t>& last_noise() const { return last_noise_; }
  const std::vector<std::uint64_t>& last_revealed() const { return last_revealed_; }
  Status LoadPrefill(mpc::Context<P>& ctx, int layer, const mpc::Shares<P>& k,
                     const mpc::Shares<P>& v) override {
    return full_->LoadPrefill(ctx, layer, k, v);
  }

 private:
  struct Selection;  // one layer's selection at this step (below)
  MpcacheKv(mpc::BinaryContext<P>& ctx, std::unique_ptr<SecureKvCache<P>> full,
            const model::MpcachePolicy& policy, int compare_bits, int frac_bits)
      : ctx_(ctx),
        full_(std::move(full)),
        policy_(policy),
        compare_bits_(compare_bits),
        frac_bits_(frac_bits),
        impact_(static_cast<std::size_t>(full_->layout().n_layers())),
        reps_(static_cast<std::size_t>(full_->layout().n_layers())),
        selection_(static_cast<std::size_t>(full_->layout().n_layers())) {}
  // Representative blocks (reps_[layer].blocks or .blocks2) for `rows` representatives.
  Status EnsureRepBlocks(mpc::Context<P>& ctx, std::vector<mpc::FixedBlock<P>>& blocks,
                         std::size_t rows);
  // Computes and appends the representatives of clusters 1 .. m of `layer` not yet held.
  Status UpdateRepresentatives(mpc::Context<P>& ctx, int layer, std::size_t m);
  // The residual path's mean keys and values of clusters 1 .. m of `layer` not yet held.
  Status UpdateMeans(mpc::Context<P>& ctx, int layer, std::size_t m);
  // The n_heads x (attended + m) scores: `out` (n_heads x attended) then the residual path's
  // columns from `virt` (n_heads x m raw mean-key scores) with its bias and selection mask.
  mpc::Shares<P> WithResidual(mpc::Context<P>& ctx, mpc::Shares<P> out, const mpc::Shares<P>& virt,
                              const model::SelectionShape& shape, const Selection& sel) const;
  // The next n representatives of `layer` in one batch.
  Status AddRepresentatives(mpc::Context<P>& ctx, int layer, std::size_t n);
  static std::vector<mpc::BlockUse<P>> RepUses(const std::vector<mpc::FixedBlock<P>>& blocks,
                                               std::size_t rows);
  // Whether a layer's query at `length` cached rows is one of the prompt's observation window
  // (static eviction).
  bool Observing(int length) const {
    return eviction_ && eviction_->evicts() && !layout().prefill_done() &&
           length - 1 >= eviction_->observe_from();
  }
  // Adds this query's weights (or sigmoids; n_heads x L, cache order) to `layer`'s
  // importance when it is one of the prompt's observation window.
  void Observe(int layer, int length, const mpc::Shares<P>& weights);
  // `n` rows of attended weights (n x attended, model::AttendedPositions' order) back to
  // cache order (n x L), unattended positions an exact 0: W2^T S2 and W^T S under a secret
  // selection (two products with level 2, one without), public copies for a revealed one.
  Result<mpc::Shares<P>> Scatter(mpc::Context<P>& ctx, const model::SelectionShape& shape,
                                 const Selection& sel, const mpc::Shares<P>& probs,
                                 std::size_t n) const;
  // Impact re-weighting: adds `layer`'s kept rows' biases to raw scores (n_heads x L, cache
  // order; local).
  void AddImpact(int layer, mpc::Shares<P>& raw, std::size_t length) const;
  // The static eviction of every layer (EndPrefill).
  Status Evict(mpc::Context<P>& ctx);
  // reveal: plain | dp: opens the (noisy) cluster scores and, with level 2, the
  // candidates' sub-scores, and makes the selection public.
  Status RevealSelection(mpc::Context<P>& ctx, mpc::Shares<P> cluster, const mpc::Shares<P>& sub,
                         const model::SelectionShape& shape, Selection& sel);

  mpc::BinaryContext<P>& ctx_;
  std::unique_ptr<SecureKvCache<P>> full_;
  model::MpcachePolicy policy_;
  int compare_bits_;
  int frac_bits_;
  std::optional<model::EvictionShape> eviction_;  // set by BeginPrompt when the policy evicts
  std::vector<mpc::Shares<P>> importance_;        // [layer] (prompt rows) while observing
  // Impact re-weighting: [layer][kept row] the raw-score bias of the rows the eviction kept.
  std::vector<mpc::Shares<P>> impact_;
  std::optional<std::pair<int, mpc::Shares<P>>> observed_;  // sigmoid eviction: layer, sigmoids
  struct Reps {
    std::vector<mpc::FixedBlock<P>> blocks;      // cluster c + 1: row c
    std::vector<mpc::FixedBlock<P>> blocks2;     // level 2: sub-cluster u of cluster c + 1: c s + u
    std::size_t count = 0;                       // clusters represented (1 .. count)
    std::vector<mpc::FixedBlock<P>> kbar, vbar;  // residual path: cluster c + 1's means, row c
    std::size_t means = 0;                       // clusters with means (1 .. means)
  };
  std::vector<Reps> reps_;  // [layer]
  struct Selection {
    int length = -1;                // the L it was made at
    mpc::FixedOperand<P> one_hot;   // S (k x m) under its fixed mask (reveal: none)
    mpc::FixedOperand<P> one_hot2;  // level 2: S2 (k2 x k s), of the gathered sub-clusters
    bool revealed = false;          // reveal: plain | dp: the selection is public
    std::vector<int> picked;        // ... these candidates, in decreasing (noisy) score
    std::vector<int> picked2;       // ... and these gathered sub-clusters (level 2)
  };
  std::vector<Selection> selection_;  // [layer], this step's
  mpc::Shares<P> blend_;              // score reuse: the last selecting layer's own scores
  int blend_length_ = -1;             // ... made at this many cached rows
  std::optional<Prg> noise_prg_;      // reveal: dp, this party's private noise
  std::uint64_t revealed_ = 0;
  std::vector<std::uint64_t> last_noise_, last_revealed_;
};

}  // namespace mpcache::infer
