#include "infer/mpcache_kv.h"

#include <cmath>
#include <string>

#include "mpc/compare/rank_select.h"
#include "mpc/compare/select.h"
#include "mpc/io.h"
#include "mpc/trunc.h"
#include "net/comm_stats.h"

namespace mpcache::infer {

using mpc::Shares;

namespace {

// The cluster scores compare raw q . r values (2f + 8 fractional bits, no truncation):
// compared over the whole ring so the secure selection is exact.
constexpr int kClusterScoreBits = 64;

}  // namespace

template <typename P>
Result<std::unique_ptr<MpcacheKv<P>>> MpcacheKv<P>::Create(mpc::BinaryContext<P>& ctx,
                                                           const model::ModelConfig& config,
                                                           int max_seq_len, int block_tokens,
                                                           const model::MpcachePolicy& policy,
                                                           int compare_bits, int frac_bits) {
  MPCACHE_RETURN_IF_ERROR(policy.Validate());
  MPCACHE_ASSIGN_OR_RETURN(std::unique_ptr<SecureKvCache<P>> full,
                           SecureKvCache<P>::Create(config, max_seq_len, block_tokens));
  return std::unique_ptr<MpcacheKv>(
      new MpcacheKv(ctx, std::move(full), policy, compare_bits, frac_bits));
}

template <typename P>
Result<std::vector<mpc::AttentionShape>> MpcacheKv<P>::Prepare(mpc::Context<P>& ctx) {
  std::vector<mpc::AttentionShape> plan;
  const model::KvLayout& lay = layout();
  for (int l = 0; l < lay.n_layers(); ++l) {
    if (lay.length(l) >= lay.max_seq_len()) break;  // Append will refuse
    const int length = lay.length(l) + 1;
    const model::KvPlan next = lay.PlanAt(l, length);
    const int blocks = next.blocks.empty() ? 0 : next.blocks.back().block + 1;
    MPCACHE_RETURN_IF_ERROR(full_->EnsureBlocks(ctx, l, blocks));
    MPCACHE_ASSIGN_OR_RETURN(auto keys, full_->KeyUses(l, next));
    MPCACHE_ASSIGN_OR_RETURN(auto values, full_->ValueUses(l, next));
    const model::SelectionShape shape = model::ShapeFor(policy_, length);
    Reps& reps = reps_[static_cast<std::size_t>(l)];
    if (const auto mv = static_cast<std::size_t>(shape.residual_columns()); mv > 0) {
      MPCACHE_RETURN_IF_ERROR(EnsureRepBlocks(ctx, reps.kbar, mv));
      MPCACHE_RETURN_IF_ERROR(EnsureRepBlocks(ctx, reps.vbar, mv));
    }
    if (shape.selects() && policy_.SelectingLayer(l) == l) {
      const auto m = static_cast<std::size_t>(shape.candidates);
      MPCACHE_RETURN_IF_ERROR(EnsureRepBlocks(ctx, reps.blocks, m));
      for (const auto& u : RepUses(reps.blocks, m)) keys.push_back(u);
      if (shape.selects2()) {
        const std::size_t ms = m * static_cast<std::size_t>(shape.subs);
        MPCACHE_RETURN_IF_ERROR(EnsureRepBlocks(ctx, reps.blocks2, ms));
        for (const auto& u : RepUses(reps.blocks2, ms)) keys.push_back(u);
      }
    }
    // The residual path's mean keys are scored last, its mean values mixed last.
    const auto mv = static_cast<std::size_t>(shape.residual_columns());
    for (const auto& u : RepUses(reps.kbar, mv)) keys.push_back(u);
    for (const auto& u : RepUses(reps.vbar, mv)) values.push_back(u);
    plan.push_back(mpc::ShapeOf(mpc::MaskSide::kRight, full_->heads(), keys));
    plan.push_back(mpc::ShapeOf(mpc::MaskSide::kLeft, full_->heads(), values));
  }
  MPCACHE_RETURN_IF_ERROR(ctx.prep().Announce(plan));
  return plan;
}

template <typename P>
Result<Shares<P>> MpcacheKv<P>::Scores(mpc::Context<P>& ctx, int layer, const model::KvPlan& plan,
                                       const Shares<P>& q) {
  if (layer < 0 || layer >= layout().n_layers()) return InvalidArgument("KV scores: bad layer");
  const int length = plan.length();
  const model::SelectionShape shape = model::ShapeFor(policy_, length);
  if (!shape.selects()) {
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> raw, full_->Scores(ctx, layer, plan, q));
    AddImpact(layer, raw, static_cast<std::size_t>(length));
    return raw;
  }
  const std::size_t nh = full_->heads().n_heads, L = static_cast<std::size_t>(length);
  const auto cs = static_cast<std::size_t>(shape.cluster_tokens);
  const auto m = static_cast<std::size_t>(shape.candidates);
  const auto k = static_cast<std::size_t>(shape.keep);
  const bool two = shape.selects2();
  const auto s = static_cast<std::size_t>(shape.subs);
  const auto cs2 = static_cast<std::size_t>(shape.sub_tokens);
  const auto k2 = static_cast<std::size_t>(shape.keep2);
  const std::size_t ms = two ? m * s : 0;  // sub-scores scored with the clusters'
  const auto mv = static_cast<std::size_t>(shape.residual_columns());
  const int sl = policy_.SelectingLayer(layer);
  Shares<P> raw, sub;       // sub: level 2, the candidates' sub-scores (c s + u)
  Shares<P> virt(nh * mv);  // the residual path's mean-key scores (n_heads x m)
  if (mv > 0) {
    net::PhaseScope phase(ctx.stats(), "select");
    MPCACHE_RETURN_IF_ERROR(UpdateMeans(ctx, layer, mv));
  }
  const bool selecting = sl == layer;
  if (selecting) {
    net::PhaseScope phase(ctx.stats(), "select");
    MPCACHE_RETURN_IF_ERROR(UpdateRepresentatives(ctx, layer, m));
  }
  // One opening of q scores the keys and, after them, this layer's representatives (a
  // sharing layer has none) and mean keys: n_heads x (L + mc + msc + mv).
  const std::size_t mc = selecting ? m : 0, msc = selecting ? ms : 0;
  Shares<P> cluster(mc);  // sum over heads of q_h . r_c
  sub = Shares<P>(msc);
  if (mc + mv == 0) {
    MPCACHE_ASSIGN_OR_RETURN(raw, full_->Scores(ctx, layer, plan, q));
  } else {
    const Reps& reps = reps_[static_cast<std::size_t>(layer)];
    MPCACHE_ASSIGN_OR_RETURN(auto uses, full_->KeyUses(layer, plan));
    for (const auto& u : RepUses(reps.blocks, mc)) uses.push_back(u);
    for (const auto& u : RepUses(reps.blocks2, msc)) uses.push_back(u);
    for (const auto& u : RepUses(reps.kbar, mv)) uses.push_back(u);
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> all, mpc::AttentionScores<P>(ctx, full_->heads(), q, uses));
    net::PhaseScope phase(ctx.stats(), "select");
    raw = Shares<P>(nh * L);
    const std::size_t width = L + mc + msc + mv;
    for (std::size_t h = 0; h < nh; ++h) {
      const std::size_t row = h * width;
      for (std::size_t t = 0; t < L; ++t) raw.CopyFrom(h * L + t, all, row + t);
      for (std::size_t c = 0; c < mc; ++c) cluster.AddFrom(c, all, row + L + c);
      for (std::size_t g = 0; g < msc; ++g) sub.AddFrom(g, all, row + L + mc + g);
      for (std::size_t c = 0; c < mv; ++c) virt.CopyFrom(h * mv + c, all, row + L + mc + msc + c);
    }
  }
  AddImpact(layer, raw, L);
  if (selecting && policy_.share_layers && policy_.DecayQ() > 0) {
    // Cross-layer score reuse: + the previous selecting layer's own scores of this step,
    // decayed (one truncation); this layer's own scores are the next one's.
    net::PhaseScope phase(ctx.stats(), "select");
    Shares<P> own = cluster;
    if (policy_.BlendsScores(layer) && blend_length_ == length && blend_.size() == m) {
      const std::uint64_t dq[] = {static_cast<std::uint64_t>(policy_.DecayQ())};
      mpc::MulPublicInPlace(blend_, std::span<const std::uint64_t>(dq));
      MPCACHE_ASSIGN_OR_RETURN(Shares<P> decayed, mpc::Trunc<P>(ctx, blend_, model::kDecayShift));
      mpc::AddInPlace(cluster, decayed);
    }
    blend_ = std::move(own);
    blend_length_ = length;
  }
  if (selecting) {
    net::PhaseScope phase(ctx.stats(), "select");
    Selection sel;
    sel.length = length;
    if (policy_.reveals()) {
      MPCACHE_RETURN_IF_ERROR(RevealSelection(ctx, std::move(cluster), sub, shape, sel));
    } else {
      MPCACHE_ASSIGN_OR_RETURN(Shares<P> one_hot,
                               mpc::RowRankSelection<P>(ctx_, cluster, 1, m, k, kClusterScoreBits));
      MPCACHE_ASSIGN_OR_RETURN(sel.one_hot, mpc::MaskFixed<P>(ctx, std::move(one_hot), k, m));
    }
    selection_[static_cast<std::size_t>(layer)] = std::move(sel);
  }
  Selection& sel = selection_[static_cast<std::size_t>(sl)];
  if (sel.length != length) {
    return Internal("MPCache: layer " + std::to_string(layer) + " shares the selection of layer " +
                    std::to_string(sl) + ", which was not made at this step");
  }
  net::PhaseScope phase(ctx.stats(), "select");
  const auto A = static_cast<std::size_t>(shape.attended());
  if (sel.revealed) {
    // A public selection: the attended positions' scores, copied.
    const std::vector<int> rows = model::AttendedPositions(shape, sel.picked, sel.picked2);
    Shares<P> out(nh * A);
    for (std::size_t h = 0; h < nh; ++h) {
      for (std::size_t t = 0; t < A; ++t) {
        out.CopyFrom(h * A + t, raw, h * L + static_cast<std::size_t>(rows[t]));
      }
    }
    return WithResidual(ctx, std::move(out), virt, shape, sel);
  }
  // Gather: G = S x M, M[c][h cs + t] = raw[h][(c + 1) cs + t] (k x n_heads cs); the
  // selecting layer's level 2 gathers its sub-scores Z[c][u] in the same product (columns
  // n_heads cs + u).
  const std::size_t zs = selecting && two ? s : 0;
  const std::size_t gw = nh * cs + zs;
  Shares<P> cand(m * gw);
  for (std::size_t c = 0; c < m; ++c) {
    for (std::size_t h = 0; h < nh; ++h) {
      for (std::size_t t = 0; t < cs; ++t) {
        cand.CopyFrom(c * gw + h * cs + t, raw, h * L + (c + 1) * cs + t);
      }
    }
    for (std::size_t u = 0; u < zs; ++u) cand.CopyFrom(c * gw + nh * cs + u, sub, c * s + u);
  }
  MPCACHE_ASSIGN_OR_RETURN(Shares<P> gathered, mpc::MatMul<P>(ctx, sel.one_hot, cand, gw));
  const auto tail = static_cast<std::size_t>(shape.tail_start());
  Shares<P> out(nh * A);
  const auto head_and_tail = [&](std::size_t h, const auto& middle) {
    std::size_t at = h * A;
    for (std::size_t t = 0; t < cs; ++t) out.CopyFrom(at++, raw, h * L + t);
    middle(at);
    for (std::size_t t = tail; t < L; ++t) out.CopyFrom(at++, raw, h * L + t);
  };
  if (!two) {
    for (std::size_t h = 0; h < nh; ++h) {
      head_and_tail(h, [&](std::size_t& at) {
        for (std::size_t j = 0; j < k; ++j) {
          for (std::size_t t = 0; t < cs; ++t) out.CopyFrom(at++, gathered, j * gw + h * cs + t);
        }
      });
    }
    return WithResidual(ctx, std::move(out), virt, shape, sel);
  }
  const std::size_t g1 = k * s;  // gathered sub-clusters
  if (selecting) {
    // Level 2: rank the gathered sub-scores (j s + u) -> S2 (k2 x k s).
    Shares<P> gsub(g1);
    for (std::size_t g = 0; g < g1; ++g) gsub.CopyFrom(g, gathered, (g / s) * gw + nh * cs + g % s);
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> one_hot2,
                             mpc::RowRankSelection<P>(ctx_, gsub, 1, g1, k2, kClusterScoreBits));
    MPCACHE_ASSIGN_OR_RETURN(sel.one_hot2, mpc::MaskFixed<P>(ctx, std::move(one_hot2), k2, g1));
  }
  // Second gather: G2 = S2 x M2, M2[j s + u][h cs2 + t] = G[j][h cs + u cs2 + t].
  Shares<P> cand2(g1 * nh * cs2);
  for (std::size_t g = 0; g < g1; ++g) {
    for (std::size_t h = 0; h < nh; ++h) {
      for (std::size_t t = 0; t < cs2; ++t) {
        cand2.CopyFrom((g * nh + h) * cs2 + t, gathered, (g / s) * gw + h * cs + (g % s) * cs2 + t);
      }
    }
  }
  MPCACHE_ASSIGN_OR_RETURN(Shares<P> gathered2, mpc::MatMul<P>(ctx, sel.one_hot2, cand2, nh * cs2));
  for (std::size_t h = 0; h < nh; ++h) {
    head_and_tail(h, [&](std::size_t& at) {
      for (std::size_t j = 0; j < k2; ++j) {
        for (std::size_t t = 0; t < cs2; ++t) {
          out.CopyFrom(at++, gathered2, (j * nh + h) * cs2 + t);
        }
      }
    });
  }
  return WithResidual(ctx, std::move(out), virt, shape, sel);
}

template <typename P>
Shares<P> MpcacheKv<P>::WithResidual(mpc::Context<P>& ctx, Shares<P> out, const Shares<P>& virt,
                                     const model::SelectionShape& shape,
                                     const Selection& sel) const {
  const std::size_t nh = full_->heads().n_heads, mv = virt.size() / std::max<std::size_t>(nh, 1);
  if (mv == 0) return out;
  const std::size_t A = out.size() / nh;
  const auto hs = static_cast<int>(full_->heads().head_size);
  // selected_c x mask, for every candidate: the column sums of S (reveal: none), or public.
  Shares<P> masked(mv);
  const std::uint64_t mask[] = {model::ResidualMaskRaw(hs, frac_bits_)};
  if (sel.revealed) {
    std::vector<std::uint64_t> c(mv, 0);
    for (const int p : sel.picked) c[static_cast<std::size_t>(p)] = mask[0];
    masked = mpc::PublicShares<P>(ctx.key(), c);
  } else {
    for (std::size_t j = 0; j < sel.one_hot.rows; ++j) {
      for (std::size_t c = 0; c < mv; ++c) masked.AddFrom(c, sel.one_hot.x, j * mv + c);
    }
    mpc::MulPublicInPlace(masked, std::span<const std::uint64_t>(mask));
  }
  const std::uint64_t bias[] = {model::ResidualBiasRaw(shape.cluster_tokens, hs, frac_bits_)};
  Shares<P> res(nh * (A + mv));
  for (std::size_t h = 0; h < nh; ++h) {
    for (std::size_t t = 0; t < A; ++t) res.CopyFrom(h * (A + mv) + t, out, h * A + t);
    Shares<P> col = virt.Slice(h * mv, mv);
    mpc::AddPublicInPlace(ctx.key(), col, std::span<const std::uint64_t>(bias));
    for (std::size_t c = 0; c < mv; ++c) {
      res.CopyFrom(h * (A + mv) + A + c, col, c);
      res.v[h * (A + mv) + A + c] -= masked.v[c];
      if constexpr (P::kMalicious) res.m[h * (A + mv) + A + c] -= masked.m[c];
    }
  }
  return res;
}

template <typename P>
void MpcacheKv<P>::AddImpact(int layer, Shares<P>& raw, std::size_t length) const {
  const Shares<P>& bias = impact_[static_cast<std::size_t>(layer)];
  if (bias.size() == 0) return;
  const std::size_t nh = full_->heads().n_heads, rows = std::min(bias.size(), length);
  for (std::size_t h = 0; h < nh; ++h) {
    for (std::size_t t = 0; t < rows; ++t) raw.AddFrom(h * length + t, bias, t);
  }
}

template <typename P>
Result<Shares<P>> MpcacheKv<P>::Scatter(mpc::Context<P>& ctx, const model::SelectionShape& shape,
                                        const Selection& sel, const Shares<P>& probs,
                                        std::size_t n) const {
  const auto L = static_cast<std::size_t>(shape.length);
  const auto cs = static_cast<std::size_t>(shape.cluster_tokens);
  const auto m = static_cast<std::size_t>(shape.candidates);
  const auto k = static_cast<std::size_t>(shape.keep);
  const auto A = static_cast<std::size_t>(shape.attended());
  const auto tail = static_cast<std::size_t>(shape.tail_start());
  const auto middle = A - cs - (L - tail);  // the selected clusters' (or sub-clusters') weights
  Shares<P> p(n * L);
  if (sel.revealed) {
    // A public selection: the weights go back to their positions, the others stay 0.
    const std::vector<int> rows = model::AttendedPositions(shape, sel.picked, sel.picked2);
    for (std::size_t h = 0; h < n; ++h) {
      for (std::size_t t = 0; t < A; ++t) {
        p.CopyFrom(h * L + static_cast<std::size_t>(rows[t]), probs, h * A + t);
      }
    }
    return p;
  }
  net::PhaseScope phase(ctx.stats(), "select");
  // W^T (n cs x k): W^T[h cs + t][j] = the weight of token t of the j-th gathered cluster;
  // with level 2 first scattered from the k2 sub-clusters by S2.
  Shares<P> wt(n * cs * k);
  if (!shape.selects2()) {
    for (std::size_t h = 0; h < n; ++h) {
      for (std::size_t t = 0; t < cs; ++t) {
        for (std::size_t j = 0; j < k; ++j) {
          wt.CopyFrom((h * cs + t) * k + j, probs, h * A + cs + j * cs + t);
        }
      }
    }
  } else {
    const auto s = static_cast<std::size_t>(shape.subs);
    const auto cs2 = static_cast<std::size_t>(shape.sub_tokens);
    const auto k2 = static_cast<std::size_t>(shape.keep2);
    // W2^T (n cs2 x k2) S2 -> n cs2 x k s.
    Shares<P> wt2(n * cs2 * k2);
    for (std::size_t h = 0; h < n; ++h) {
      for (std::size_t t = 0; t < cs2; ++t) {
        for (std::size_t g = 0; g < k2; ++g) {
          wt2.CopyFrom((h * cs2 + t) * k2 + g, probs, h * A + cs + g * cs2 + t);
        }
      }
    }
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> spread2, mpc::MatMul<P>(ctx, wt2, n * cs2, sel.one_hot2));
    for (std::size_t h = 0; h < n; ++h) {
      for (std::size_t g = 0; g < k * s; ++g) {
        for (std::size_t t = 0; t < cs2; ++t) {
          wt.CopyFrom((h * cs + (g % s) * cs2 + t) * k + g / s, spread2, (h * cs2 + t) * k * s + g);
        }
      }
    }
  }
  MPCACHE_ASSIGN_OR_RETURN(Shares<P> spread, mpc::MatMul<P>(ctx, wt, n * cs, sel.one_hot));
  for (std::size_t h = 0; h < n; ++h) {
    for (std::size_t t = 0; t < cs; ++t) p.CopyFrom(h * L + t, probs, h * A + t);
    for (std::size_t c = 0; c < m; ++c) {
      for (std::size_t t = 0; t < cs; ++t) {
        p.CopyFrom(h * L + (c + 1) * cs + t, spread, (h * cs + t) * m + c);
      }
    }
    for (std::size_t t = tail; t < L; ++t)
      p.CopyFrom(h * L + t, probs, h * A + cs + middle + (t - tail));
  }
  return p;
}

template <typename P>
Result<Shares<P>> MpcacheKv<P>::Mix(mpc::Context<P>& ctx, int layer, const model::KvPlan& plan,
                                    const Shares<P>& weights) {
  if (layer < 0 || layer >= layout().n_layers()) return InvalidArgument("KV mix: bad layer");
  const int length = plan.length();
  const model::SelectionShape shape = model::ShapeFor(policy_, length);
  const std::size_t nh = full_->heads().n_heads, L = static_cast<std::size_t>(length);
  const auto A = static_cast<std::size_t>(shape.attended());
  const auto mv = static_cast<std::size_t>(shape.residual_columns());
  if (weights.size() != nh * (A + mv)) {
    return InvalidArgument("MPCache mix: " + std::to_string(weights.size()) +
                           " weights for n_heads x " + std::to_string(A + mv) +
                           " attended positions and residual columns");
  }
  // Sigmoid eviction: this query's sigmoids (n_heads x (A + m), as the weights) score the
  // prompt instead of the weights.
  std::optional<Shares<P>> sig;
  if (policy_.eviction_score == model::EvictionScore::kSigmoid && Observing(length)) {
    if (!observed_ || observed_->first != layer) {
      return Internal("MPCache mix of an observed query before its sigmoid scores");
    }
    sig = std::move(observed_->second);
    observed_.reset();
    if (sig->size() != weights.size()) {
      return InvalidArgument("MPCache: " + std::to_string(sig->size()) + " observed sigmoids for " +
                             std::to_string(weights.size()) + " weights");
    }
  }
  if (!shape.selects()) {
    Observe(layer, length, sig ? *sig : weights);
    return full_->Mix(ctx, layer, plan, weights);
  }
  // probs: the attended positions' weights (n_heads x A), the observed sigmoids' below them
  // (rows n_heads .. 2 n_heads: scattered by the same products); w: the residual path's
  // weights (n_heads x m).
  const std::size_t rows = sig ? 2 * nh : nh;
  Shares<P> probs = mv == 0 && !sig ? weights : Shares<P>(rows * A), w(nh * mv);
  for (std::size_t h = 0; mv > 0 && h < nh; ++h) {
    for (std::size_t c = 0; c < mv; ++c) w.CopyFrom(h * mv + c, weights, h * (A + mv) + A + c);
  }
  for (std::size_t h = 0; (mv > 0 || sig) && h < nh; ++h) {
    for (std::size_t t = 0; t < A; ++t) {
      probs.CopyFrom(h * A + t, weights, h * (A + mv) + t);
      if (sig) probs.CopyFrom((nh + h) * A + t, *sig, h * (A + mv) + t);
    }
  }
  const Selection& sel = selection_[static_cast<std::size_t>(policy_.SelectingLayer(layer))];
  if (sel.length != length) return Internal("MPCache mix before this step's selection");
  MPCACHE_ASSIGN_OR_RETURN(Shares<P> scattered, Scatter(ctx, shape, sel, probs, rows));
  Shares<P> p;
  if (sig) {
    p = scattered.Slice(0, nh * L);
    Observe(layer, length, scattered.Slice(nh * L, nh * L));
  } else {
    Observe(layer, length, scattered);
    p = std::move(scattered);
  }
  if (mv == 0) return full_->Mix(ctx, layer, plan, p);
  // The mean values mixed in the same product: [p | w] against [value blocks | vbar].
  Shares<P> pw(nh * (L + mv));
  for (std::size_t h = 0; h < nh; ++h) {
    for (std::size_t t = 0; t < L; ++t) pw.CopyFrom(h * (L + mv) + t, p, h * L + t);
    for (std::size_t c = 0; c < mv; ++c) pw.CopyFrom(h * (L + mv) + L + c, w, h * mv + c);
  }
  MPCACHE_ASSIGN_OR_RETURN(auto uses, full_->ValueUses(layer, plan));
  for (const auto& u : RepUses(reps_[static_cast<std::size_t>(layer)].vbar, mv)) uses.push_back(u);
  return mpc::AttentionMix<P>(ctx, full_->heads(), pw, uses);
}

template <typename P>
Status MpcacheKv<P>::RevealSelection(mpc::Context<P>& ctx, Shares<P> cluster, const Shares<P>& sub,
                                     const model::SelectionShape& shape, Selection& sel) {
  const std::size_t m = cluster.size();
  cluster.Append(sub);  // level 2: the sub-scores are opened with the clusters'
  const std::size_t n = cluster.size();
  if (policy_.reveal == config::Reveal::kDp) {
    // This party's own Laplace noise (scale dp_sensitivity / dp_epsilon, in score units),
    // entered with everyone else's in one round: the opened scores carry the sum.
    if (!noise_prg_) noise_prg_.emplace(ctx.PrivateSeed());
    const double scale = policy_.dp_sensitivity / policy_.dp_epsilon;
    const double unit = std::ldexp(1.0, policy_.ScoreFracBits(frac_bits_));
    const double cap = std::ldexp(1.0, 62) / unit;  // |noise| below 2^62 ring units
    last_noise_.assign(n, 0);
    for (std::size_t c = 0; c < n; ++c) {
      double u = 0;
      do {
        u = noise_prg_->NextDouble() - 0.5;
      } while (std::abs(u) >= 0.5);
      const double lap = -scale * std::copysign(1.0, u) * std::log1p(-2 * std::abs(u));
      const double clamped = std::clamp(lap, -cap, cap);
      last_noise_[c] = static_cast<std::uint64_t>(std::llround(clamped * unit));
    }
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> noise, mpc::InputSum<P>(ctx, last_noise_));
    mpc::AddInPlace(cluster, noise);
  }
  MPCACHE_ASSIGN_OR_RETURN(last_revealed_, ctx.OpenOwned(std::move(cluster)));
  // Nothing revealed is acted on before everything opened so far passed its check.
  MPCACHE_RETURN_IF_ERROR(mpc::CheckAllMacs<P>(ctx_));
  const std::span<const std::uint64_t> opened(last_revealed_);
  sel.revealed = true;
  sel.picked = model::TopKIndices(opened.first(m), static_cast<std::size_t>(shape.keep));
  ++revealed_;
  if (n > m) {
    sel.picked2 = model::TopKIndices(model::GatheredSubScores(shape, opened.subspan(m), sel.picked),
                                     static_cast<std::size_t>(shape.keep2));
    ++revealed_;  // a second selection, of the sub-clusters
  }
  return Status::Ok();
}

template class MpcacheKv<mpc::SemiHonest>;
template class MpcacheKv<mpc::Spdz2k>;

}  // namespace mpcache::infer
