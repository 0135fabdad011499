#include "infer/step_cost.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "common/fixed_math.h"
#include "infer/step_cost_ledger.h"
#include "mpc/compare/binary_context.h"
#include "mpc/compare/compare.h"
#include "mpc/compare/rank_select.h"
#include "mpc/compare/select.h"
#include "mpc/context.h"

namespace mpcache::infer {
namespace {

using step_cost_detail::ArgMaxCore;
using step_cost_detail::CheckMath;
using step_cost_detail::Ledger;
using step_cost_detail::RmsNormCore;
using step_cost_detail::RowMaxCore;
using step_cost_detail::SiluTimesCore;
using step_cost_detail::SoftmaxCore;
using step_cost_detail::u64;

// Malicious mode keeps every opened value for the batched MAC check; MpcacheKv's
// representatives check early past this many pending values (infer/mpcache_reps.cc).
constexpr u64 kRepCheckPendingBeyond = u64{1} << 22;
// Compared values per representative RowMax call and per AddRepresentatives chunk
// (infer/mpcache_reps.cc).
constexpr u64 kRepChunkValues = u64{1} << 16;
Status CheckQuery(const StepCostQuery& q) {
  const model::ModelConfig& c = q.config;
  MPCACHE_RETURN_IF_ERROR(c.Validate());
  MPCACHE_RETURN_IF_ERROR(CheckMath(q.math));
  if (q.context < 1) {
    return InvalidArgument("step cost: context " + std::to_string(q.context) +
                           ": decode-step's --context is at least 1");
  }
  if (q.context + 1 > c.seq_len) {
    return InvalidArgument("step cost: context " + std::to_string(q.context) +
                           " leaves no room for the step in the model's " +
                           std::to_string(c.seq_len) + "-position context; use at most " +
                           std::to_string(c.seq_len - 1));
  }
  if (q.block < 1) {
    return InvalidArgument("step cost: KV block of " + std::to_string(q.block) +
                           " tokens (at least 1)");
  }
  if (q.policy) MPCACHE_RETURN_IF_ERROR(q.policy->Validate());
  return Status::Ok();
}

// RowRankSelection(1 row of `cols`, keep k, 64-bit values): the pairs' comparisons (none for
// one column) and the 2 k cols rank tests at RankBits(cols) — RankTopKRounds(cols, 64) - 1
// rounds and RankTopKBytesPerPeer(...) without its product (steps 1-3 of rank_select.h).
void RankSelection(Ledger& g, u64 cols, u64 k) {
  if (cols > 1) g.Ltz(cols * (cols - 1) / 2, 64);
  g.Ltz(2 * k * cols, mpc::RankBits(cols));
}

// MpcacheKv::AddRepresentatives of n clusters (infer/mpcache_reps.cc), s sub-clusters of cs2
// tokens each: minmax takes the max of k and of -k over every (sub-)cluster's rows — RowMax
// of n s 2 kv rows of cs2 values, in calls of at most kRepChunkValues / cs2 rows (malicious:
// a MAC check right after a call that leaves more than 2^22 values and bits pending), and
// with s > 1 the clusters' own over their s sub-clusters' (RowMax of n 2 kv rows of s); mean
// is local. Then the n (and n s) representative rows appended: 1 round, kv values each.
void AddRepresentatives(Ledger& g, const model::MpcachePolicy& pol, u64 kv, u64 n,
                        int compare_bits) {
  const auto s = static_cast<u64>(pol.subclusters());
  const u64 cs2 = static_cast<u64>(pol.cluster_tokens) / s;
  if (pol.representative == model::Representative::kMinMax) {
    const u64 total = n * s * kv * 2, per_call = std::max<u64>(1, kRepChunkValues / cs2);
    for (u64 r = 0; r < total; r += per_call) {
      RowMaxCore(g, std::min(per_call, total - r), cs2, compare_bits);
      if (g.malicious() && g.pending() > kRepCheckPendingBeyond) g.Check();
    }
    if (s > 1) RowMaxCore(g, n * kv * 2, s, compare_bits);
  }
  g.Exchange(n * kv + (s > 1 ? n * s * kv : 0));
}

}  // namespace

Result<std::map<std::string, PhaseCost>> PredictStepCost(const StepCostQuery& q) {
  MPCACHE_RETURN_IF_ERROR(CheckQuery(q));
  const model::ModelConfig& c = q.config;
  const FixedMathParams& p = q.math;
  const auto d = static_cast<u64>(c.dim), kv = static_cast<u64>(c.kv_dim());
  const auto nh = static_cast<u64>(c.n_heads), hd = static_cast<u64>(c.hidden_dim);
  const auto vocab = static_cast<u64>(c.vocab_size);
  const int length = q.context + 1;  // L: the step's own row included
  std::map<std::string, PhaseCost> out;
  for (const char* name : {"attention", "classifier_argmax", "embedding", "ffn", "kv_append",
                           "mac_check", "mix", "norms", "projections", "scores", "softmax"}) {
    out[name] = PhaseCost{};
  }
  std::optional<model::SelectionShape> shape;
  if (q.policy) shape = model::ShapeFor(*q.policy, length);
  const bool selects = shape && shape->selects();
  if (selects) out["select"] = PhaseCost{};
  Ledger g(q.malicious);
  const auto in = [&](const char* phase) { g.Into(&out[phase]); };
  for (int l = 0; l < c.n_layers; ++l) {
    // xb = rmsnorm(x): the embedding row at layer 0, x + a pending projection afterwards.
    in("norms");
    RmsNormCore(g, p, 1, d, l > 0, true);
    // q, k, v truncated together (RoPE's 2f on q and k, f on v): one flush.
    in("attention");
    g.Exchange(d + 2 * kv);
    // q - B opened once against every block; the appended K/V rows' D ride it.
    in("scores");
    g.Exchange(d);
    g.Ride(2 * kv);
    u64 cols = static_cast<u64>(length), mix_cols = cols;
    if (selects) {
      const model::SelectionShape& s = *shape;
      const model::MpcachePolicy& pol = *q.policy;
      const auto m = static_cast<u64>(s.candidates), k = static_cast<u64>(s.keep);
      const auto cs = static_cast<u64>(s.cluster_tokens), subs = static_cast<u64>(s.subs);
      const auto cs2 = static_cast<u64>(s.sub_tokens), k2 = static_cast<u64>(s.keep2);
      const bool two = s.selects2(), selecting = pol.SelectingLayer(l) == l;
      const u64 g1 = k * subs;  // gathered sub-clusters
      in("select");
      if (selecting) {
        // Score reuse: + decay x the previous selecting layer's m scores, truncated (1 round).
        if (pol.BlendsScores(l)) g.Exchange(m);
        if (pol.reveals()) {
          // The m cluster scores (and level 2's m s sub-scores) opened, noisy under dp
          // (every party's noise entered first), and everything opened so far checked.
          const u64 opened = m + (two ? m * subs : 0);
          if (pol.reveal == config::Reveal::kDp) g.InputSum(opened);
          g.Exchange(opened);
          g.Check();
        } else {
          RankSelection(g, m, k);
          g.Exchange(k * m);  // S masked once (MaskFixed)
        }
      }
      if (!pol.reveals()) {
        // S x [M | Z]: the candidates' token scores (and the selecting layer's level-2
        // sub-scores) opened against S's fixed mask.
        g.Exchange(m * (nh * cs + (selecting && two ? subs : 0)));
        if (two) {
          if (selecting) {
            RankSelection(g, g1, k2);
            g.Exchange(k2 * g1);  // S2 masked once
          }
          g.Exchange(g1 * nh * cs2);  // S2 x M2
        }
      }
      cols = static_cast<u64>(s.attended()) + static_cast<u64>(s.residual_columns());
      mix_cols += static_cast<u64>(s.residual_columns());
    }
    in("softmax");
    SoftmaxCore(g, p, nh, cols, p.frac_bits + kScoreScaleBits, kScoreCompareBits);
    if (selects && !q.policy->reveals()) {
      // The weights back to cache order: W2^T S2 (level 2), then W^T S.
      in("select");
      if (shape->selects2()) {
        g.Exchange(nh * static_cast<u64>(shape->sub_tokens) * static_cast<u64>(shape->keep2));
      }
      g.Exchange(nh * static_cast<u64>(shape->cluster_tokens) * static_cast<u64>(shape->keep));
    }
    // p - B opened once against every value block (and the residual path's mean values).
    in("mix");
    g.Exchange(nh * mix_cols);
    in("attention");
    g.Exchange(d);  // the mix's truncation
    in("norms");
    RmsNormCore(g, p, 1, d, true, true);
    in("ffn");
    SiluTimesCore(g, p, hd);
  }
  in("norms");
  RmsNormCore(g, p, 1, d, true, true);
  in("classifier_argmax");
  g.Exchange(vocab);  // the logits' truncation
  ArgMaxCore(g, p, vocab);
  in("mac_check");
  g.Check();
  return out;
}

Result<PhaseCost> PredictRepresentativesCost(const StepCostQuery& q) {
  MPCACHE_RETURN_IF_ERROR(CheckQuery(q));
  if (!q.policy) {
    return InvalidArgument("step cost: the full cache makes no representatives (give a policy)");
  }
  const model::MpcachePolicy& pol = *q.policy;
  const model::ModelConfig& c = q.config;
  const auto kv = static_cast<u64>(c.kv_dim()), cs = static_cast<u64>(pol.cluster_tokens);
  // EndPrefill makes what the next step (L = context + 1) needs.
  const model::SelectionShape next = model::ShapeFor(pol, q.context + 1);
  Ledger g(q.malicious);
  PhaseCost total;
  g.Into(&total);
  const u64 chunk = std::max<u64>(1, kRepChunkValues / (2 * kv * cs));
  for (int l = 0; l < c.n_layers; ++l) {
    if (next.selects() && pol.SelectingLayer(l) == l) {
      const auto m = static_cast<u64>(next.candidates);
      for (u64 done = 0; done < m;) {
        const u64 n = std::min(chunk, m - done);
        AddRepresentatives(g, pol, kv, n, q.math.compare_bits);
        done += n;
      }
    }
    // The residual path's mean keys and values: sum x MeanMultiplier truncated (1 round),
    // then appended to their blocks (1 round), 2 kv values per cluster each.
    if (const auto mv = static_cast<u64>(next.residual_columns()); mv > 0) {
      g.Exchange(2 * kv * mv);
      g.Exchange(2 * kv * mv);
    }
  }
  g.Check();  // decode-step checks the MACs after EndPrefill
  return total;
}

Result<PhaseCost> PredictNewClusterCost(const StepCostQuery& q) {
  MPCACHE_RETURN_IF_ERROR(CheckQuery(q));
  if (!q.policy) {
    return InvalidArgument("step cost: the full cache makes no representatives (give a policy)");
  }
  const model::MpcachePolicy& pol = *q.policy;
  const auto kv = static_cast<u64>(q.config.kv_dim());
  Ledger g(q.malicious);
  PhaseCost total;
  g.Into(&total);
  for (int l = 0; l < q.config.n_layers; ++l) {
    if (pol.SelectingLayer(l) == l) AddRepresentatives(g, pol, kv, 1, q.math.compare_bits);
    if (pol.residual) {
      g.Exchange(2 * kv);  // the mean key and value, truncated
      g.Exchange(2 * kv);  // appended to their blocks
    }
  }
  return total;
}

}  // namespace mpcache::infer
