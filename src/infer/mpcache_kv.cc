#include "infer/mpcache_kv.h"

#include <cmath>
#include <string>

#include "mpc/compare/rank_select.h"
#include "mpc/compare/select.h"
#include "mpc/io.h"
#include "net/comm_stats.h"

namespace mpcache::infer {

using mpc::Shares;

namespace {

// The cluster scores compare raw q . r values (2f + 8 fractional bits, no truncation):
// compared over the whole ring so the secure selection is exact.
constexpr int kClusterScoreBits = 64;
constexpr std::size_t kRepChunkValues = std::size_t{1} << 18;

template <typename P>
void CopyShare(Shares<P>& to, std::size_t i, const Shares<P>& from, std::size_t j) {
  to.v[i] = from.v[j];
  if constexpr (P::kMalicious) to.m[i] = from.m[j];
}

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
Status MpcacheKv<P>::EnsureRepBlocks(mpc::Context<P>& ctx, int layer, std::size_t rows) {
  const auto cap = static_cast<std::size_t>(layout().block_tokens());
  const std::size_t kv = full_->heads().kv_dim;
  auto& blocks = reps_[static_cast<std::size_t>(layer)].blocks;
  while (blocks.size() * cap < rows) {
    MPCACHE_ASSIGN_OR_RETURN(mpc::MatrixMask<P> mask, ctx.prep().GetMatrixMask(cap, kv));
    mpc::FixedBlock<P> b;
    b.mask_id = mask.id;
    b.capacity = cap;
    b.x = Shares<P>(cap * kv);
    b.a = std::move(mask.a);
    b.d.reserve(cap * kv);
    blocks.push_back(std::move(b));
  }
  return Status::Ok();
}

template <typename P>
std::vector<mpc::BlockUse<P>> MpcacheKv<P>::RepUses(int layer, std::size_t m) const {
  std::vector<mpc::BlockUse<P>> out;
  const auto& blocks = reps_[static_cast<std::size_t>(layer)].blocks;
  for (std::size_t b = 0; b < blocks.size() && b * blocks[b].capacity < m; ++b) {
    out.push_back({&blocks[b], std::min(blocks[b].capacity, m - b * blocks[b].capacity)});
  }
  return out;
}

template <typename P>
Status MpcacheKv<P>::UpdateRepresentatives(mpc::Context<P>& ctx, int layer, std::size_t m) {
  Reps& reps = reps_[static_cast<std::size_t>(layer)];
  const std::size_t kv = full_->heads().kv_dim;
  const auto cs = static_cast<std::size_t>(policy_.cluster_tokens);
  // A long prefill's clusters in chunks of about kRepChunkValues compared values.
  const std::size_t chunk = std::max<std::size_t>(1, kRepChunkValues / (2 * kv * cs));
  while (reps.count < m) {
    MPCACHE_RETURN_IF_ERROR(AddRepresentatives(ctx, layer, std::min(chunk, m - reps.count)));
  }
  return Status::Ok();
}

template <typename P>
Status MpcacheKv<P>::AddRepresentatives(mpc::Context<P>& ctx, int layer, std::size_t n) {
  Reps& reps = reps_[static_cast<std::size_t>(layer)];
  const std::size_t kv = full_->heads().kv_dim, m = reps.count + n;
  const auto cs = static_cast<std::size_t>(policy_.cluster_tokens);
  const auto bt = static_cast<std::size_t>(layout().block_tokens());
  const auto& keys = full_->key_blocks(layer);
  // Key (cluster reps.count + 1 + j, token t, feature i) from the key blocks' shares.
  const auto key_at = [&](std::size_t j, std::size_t t) {
    const std::size_t pos = (reps.count + 1 + j) * cs + t;
    return std::pair<const Shares<P>*, std::size_t>(&keys[pos / bt].x, (pos % bt) * kv);
  };
  Shares<P> rep(n * kv);
  if (policy_.representative == model::Representative::kMean) {
    for (std::size_t j = 0; j < n; ++j) {
      for (std::size_t t = 0; t < cs; ++t) {
        const auto [x, off] = key_at(j, t);
        for (std::size_t i = 0; i < kv; ++i) {
          rep.v[j * kv + i] += x->v[off + i];
          if constexpr (P::kMalicious) rep.m[j * kv + i] += x->m[off + i];
        }
      }
    }
  } else {
    // Rows (j, i, sign) of cs values: k_t[i] and -k_t[i]; their maxima are max and -min.
    Shares<P> rows(n * kv * 2 * cs);
    for (std::size_t j = 0; j < n; ++j) {
      for (std::size_t t = 0; t < cs; ++t) {
        const auto [x, off] = key_at(j, t);
        for (std::size_t i = 0; i < kv; ++i) {
          const std::size_t r = (j * kv + i) * 2;
          rows.v[r * cs + t] = x->v[off + i];
          rows.v[(r + 1) * cs + t] = 0 - x->v[off + i];
          if constexpr (P::kMalicious) {
            rows.m[r * cs + t] = x->m[off + i];
            rows.m[(r + 1) * cs + t] = 0 - x->m[off + i];
          }
        }
      }
    }
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> mx,
                             mpc::RowMax<P>(ctx_, rows, n * kv * 2, cs, compare_bits_));
    // r = a max + (256 - a) min = a max - (256 - a) (-min): exact, f + 8 bits.
    const auto a = static_cast<std::uint64_t>(policy_.AlphaQ()), b = 256 - a;
    for (std::size_t e = 0; e < n * kv; ++e) {
      rep.v[e] = a * mx.v[2 * e] - b * mx.v[2 * e + 1];
      if constexpr (P::kMalicious) rep.m[e] = a * mx.m[2 * e] - b * mx.m[2 * e + 1];
    }
  }
  MPCACHE_RETURN_IF_ERROR(EnsureRepBlocks(ctx, layer, m));
  std::vector<std::pair<mpc::FixedBlock<P>*, Shares<P>>> rows;
  for (std::size_t j = 0; j < n; ++j) {
    const std::size_t at = reps.count + j;
    rows.emplace_back(&reps.blocks[at / bt], rep.Slice(j * kv, kv));
  }
  MPCACHE_RETURN_IF_ERROR(mpc::AppendRows<P>(ctx, std::move(rows)));
  reps.count = m;
  return Status::Ok();
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
    if (shape.selects() && policy_.SelectingLayer(l) == l) {
      const auto m = static_cast<std::size_t>(shape.candidates);
      MPCACHE_RETURN_IF_ERROR(EnsureRepBlocks(ctx, l, m));
      for (const auto& u : RepUses(l, m)) keys.push_back(u);
    }
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
  if (!shape.selects()) return full_->Scores(ctx, layer, plan, q);
  const std::size_t nh = full_->heads().n_heads, L = static_cast<std::size_t>(length);
  const auto cs = static_cast<std::size_t>(shape.cluster_tokens);
  const auto m = static_cast<std::size_t>(shape.candidates);
  const auto k = static_cast<std::size_t>(shape.keep);
  const int sl = policy_.SelectingLayer(layer);
  Shares<P> raw;
  if (sl == layer) {
    {
      net::PhaseScope phase(ctx.stats(), "select");
      MPCACHE_RETURN_IF_ERROR(UpdateRepresentatives(ctx, layer, m));
    }
    MPCACHE_ASSIGN_OR_RETURN(auto uses, full_->KeyUses(layer, plan));
    for (const auto& u : RepUses(layer, m)) uses.push_back(u);
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> all, mpc::AttentionScores<P>(ctx, full_->heads(), q, uses));
    net::PhaseScope phase(ctx.stats(), "select");
    raw = Shares<P>(nh * L);
    Shares<P> cluster(m);  // sum over heads of q_h . r_c
    for (std::size_t h = 0; h < nh; ++h) {
      const std::size_t row = h * (L + m);
      for (std::size_t t = 0; t < L; ++t) CopyShare(raw, h * L + t, all, row + t);
      for (std::size_t c = 0; c < m; ++c) {
        cluster.v[c] += all.v[row + L + c];
        if constexpr (P::kMalicious) cluster.m[c] += all.m[row + L + c];
      }
    }
    if (policy_.reveals()) {
      MPCACHE_ASSIGN_OR_RETURN(std::vector<int> picked,
                               RevealSelection(ctx, std::move(cluster), k));
      Selection sel;
      sel.length = length;
      sel.revealed = true;
      sel.picked = std::move(picked);
      selection_[static_cast<std::size_t>(layer)] = std::move(sel);
    } else {
      MPCACHE_ASSIGN_OR_RETURN(Shares<P> one_hot,
                               mpc::RowRankSelection<P>(ctx_, cluster, 1, m, k, kClusterScoreBits));
      MPCACHE_ASSIGN_OR_RETURN(auto fixed, mpc::MaskFixed<P>(ctx, std::move(one_hot), k, m));
      Selection sel;
      sel.length = length;
      sel.one_hot = std::move(fixed);
      selection_[static_cast<std::size_t>(layer)] = std::move(sel);
    }
  } else {
    MPCACHE_ASSIGN_OR_RETURN(raw, full_->Scores(ctx, layer, plan, q));
  }
  const Selection& sel = selection_[static_cast<std::size_t>(sl)];
  if (sel.length != length) {
    return Internal("MPCache: layer " + std::to_string(layer) + " shares the selection of layer " +
                    std::to_string(sl) + ", which was not made at this step");
  }
  net::PhaseScope phase(ctx.stats(), "select");
  const auto A = static_cast<std::size_t>(shape.attended());
  if (sel.revealed) {
    // A public selection: the attended positions' scores, copied.
    const std::vector<int> rows = model::AttendedPositions(shape, sel.picked);
    Shares<P> out(nh * A);
    for (std::size_t h = 0; h < nh; ++h) {
      for (std::size_t t = 0; t < A; ++t) {
        CopyShare(out, h * A + t, raw, h * L + static_cast<std::size_t>(rows[t]));
      }
    }
    return out;
  }
  // Gather: G = S x M, M[c][h cs + t] = raw[h][(c + 1) cs + t] (k x n_heads cs).
  Shares<P> cand(m * nh * cs);
  for (std::size_t c = 0; c < m; ++c) {
    for (std::size_t h = 0; h < nh; ++h) {
      for (std::size_t t = 0; t < cs; ++t) {
        CopyShare(cand, (c * nh + h) * cs + t, raw, h * L + (c + 1) * cs + t);
      }
    }
  }
  MPCACHE_ASSIGN_OR_RETURN(Shares<P> gathered, mpc::MatMul<P>(ctx, sel.one_hot, cand, nh * cs));
  const auto tail = static_cast<std::size_t>(shape.tail_start());
  Shares<P> out(nh * A);
  for (std::size_t h = 0; h < nh; ++h) {
    std::size_t at = h * A;
    for (std::size_t t = 0; t < cs; ++t) CopyShare(out, at++, raw, h * L + t);
    for (std::size_t j = 0; j < k; ++j) {
      for (std::size_t t = 0; t < cs; ++t) CopyShare(out, at++, gathered, (j * nh + h) * cs + t);
    }
    for (std::size_t t = tail; t < L; ++t) CopyShare(out, at++, raw, h * L + t);
  }
  return out;
}

template <typename P>
Result<Shares<P>> MpcacheKv<P>::Mix(mpc::Context<P>& ctx, int layer, const model::KvPlan& plan,
                                    const Shares<P>& probs) {
  if (layer < 0 || layer >= layout().n_layers()) return InvalidArgument("KV mix: bad layer");
  const int length = plan.length();
  const model::SelectionShape shape = model::ShapeFor(policy_, length);
  if (!shape.selects()) {
    Observe(layer, length, probs);
    return full_->Mix(ctx, layer, plan, probs);
  }
  const std::size_t nh = full_->heads().n_heads, L = static_cast<std::size_t>(length);
  const auto cs = static_cast<std::size_t>(shape.cluster_tokens);
  const auto m = static_cast<std::size_t>(shape.candidates);
  const auto k = static_cast<std::size_t>(shape.keep);
  const auto A = static_cast<std::size_t>(shape.attended());
  const auto tail = static_cast<std::size_t>(shape.tail_start());
  if (probs.size() != nh * A) {
    return InvalidArgument("MPCache mix: " + std::to_string(probs.size()) +
                           " weights for n_heads x " + std::to_string(A) + " attended positions");
  }
  const Selection& sel = selection_[static_cast<std::size_t>(policy_.SelectingLayer(layer))];
  if (sel.length != length) return Internal("MPCache mix before this step's selection");
  Shares<P> p(nh * L);
  if (sel.revealed) {
    // A public selection: the weights go back to their positions, the others stay 0.
    const std::vector<int> rows = model::AttendedPositions(shape, sel.picked);
    for (std::size_t h = 0; h < nh; ++h) {
      for (std::size_t t = 0; t < A; ++t) {
        CopyShare(p, h * L + static_cast<std::size_t>(rows[t]), probs, h * A + t);
      }
    }
  } else {
    net::PhaseScope phase(ctx.stats(), "select");
    // Scatter: W^T S, W^T[h cs + t][j] = probs[h][cs + j cs + t] (n_heads cs x k).
    Shares<P> wt(nh * cs * k);
    for (std::size_t h = 0; h < nh; ++h) {
      for (std::size_t t = 0; t < cs; ++t) {
        for (std::size_t j = 0; j < k; ++j) {
          CopyShare(wt, (h * cs + t) * k + j, probs, h * A + cs + j * cs + t);
        }
      }
    }
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> spread, mpc::MatMul<P>(ctx, wt, nh * cs, sel.one_hot));
    for (std::size_t h = 0; h < nh; ++h) {
      for (std::size_t t = 0; t < cs; ++t) CopyShare(p, h * L + t, probs, h * A + t);
      for (std::size_t c = 0; c < m; ++c) {
        for (std::size_t t = 0; t < cs; ++t) {
          CopyShare(p, h * L + (c + 1) * cs + t, spread, (h * cs + t) * m + c);
        }
      }
      for (std::size_t t = tail; t < L; ++t) {
        CopyShare(p, h * L + t, probs, h * A + cs * (1 + k) + (t - tail));
      }
    }
  }
  Observe(layer, length, p);
  return full_->Mix(ctx, layer, plan, p);
}

template <typename P>
Result<std::vector<int>> MpcacheKv<P>::RevealSelection(mpc::Context<P>& ctx, Shares<P> cluster,
                                                       std::size_t keep) {
  const std::size_t m = cluster.size();
  if (policy_.reveal == config::Reveal::kDp) {
    // This party's own Laplace noise (scale dp_sensitivity / dp_epsilon, in score units),
    // entered with everyone else's in one round: the opened scores carry the sum.
    if (!noise_prg_) noise_prg_.emplace(ctx.PrivateSeed());
    const double scale = policy_.dp_sensitivity / policy_.dp_epsilon;
    const double unit = std::ldexp(1.0, policy_.ScoreFracBits(frac_bits_));
    const double cap = std::ldexp(1.0, 62) / unit;  // |noise| below 2^62 ring units
    last_noise_.assign(m, 0);
    for (std::size_t c = 0; c < m; ++c) {
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
  ++revealed_;
  return model::TopKIndices(last_revealed_, keep);
}

template <typename P>
Status MpcacheKv<P>::BeginPrompt(int prompt_len) {
  MPCACHE_RETURN_IF_ERROR(
      model::CheckPromptAnnouncement(prompt_len, layout().position(), layout().max_seq_len()));
  eviction_.reset();
  if (policy_.evicts()) {
    eviction_ = model::EvictionFor(policy_, prompt_len);
    importance_.assign(static_cast<std::size_t>(layout().n_layers()), Shares<P>{});
  }
  return Status::Ok();
}

template <typename P>
void MpcacheKv<P>::Observe(int layer, int length, const Shares<P>& weights) {
  // The query is the layer's newest row: position length - 1 while nothing was evicted.
  if (!eviction_ || !eviction_->evicts() || layout().prefill_done() ||
      length - 1 < eviction_->observe_from()) {
    return;
  }
  const std::size_t nh = full_->heads().n_heads, L = static_cast<std::size_t>(length);
  Shares<P>& imp = importance_[static_cast<std::size_t>(layer)];
  if (imp.size() < L) {
    Shares<P> grown(L);
    for (std::size_t t = 0; t < imp.size(); ++t) CopyShare(grown, t, imp, t);
    imp = std::move(grown);
  }
  for (std::size_t h = 0; h < nh; ++h) {
    for (std::size_t t = 0; t < L; ++t) {
      imp.v[t] += weights.v[h * L + t];
      if constexpr (P::kMalicious) imp.m[t] += weights.m[h * L + t];
    }
  }
}

template <typename P>
Status MpcacheKv<P>::Evict(mpc::Context<P>& ctx) {
  const model::EvictionShape& e = *eviction_;
  const int layers = layout().n_layers();
  if (layout().position() != e.prompt) {
    return InvalidArgument("end of a prefill of " + std::to_string(e.prompt) +
                           " tokens at position " + std::to_string(layout().position()));
  }
  net::PhaseScope phase(ctx.stats(), "evict");
  const std::size_t kv = full_->heads().kv_dim, m = static_cast<std::size_t>(e.candidates);
  const auto keep = static_cast<std::size_t>(e.keep);
  const auto bt = static_cast<std::size_t>(layout().block_tokens());
  const auto sink = static_cast<std::size_t>(e.sink);
  const auto nl = static_cast<std::size_t>(layers);
  // Every layer's candidates ranked in one batch.
  Shares<P> selection;
  if (keep > 0) {
    Shares<P> scores(nl * m);
    for (std::size_t l = 0; l < nl; ++l) {
      const Shares<P>& imp = importance_[l];
      if (imp.size() < static_cast<std::size_t>(e.prompt)) {
        return Internal("MPCache eviction: layer " + std::to_string(l) +
                        " was not observed over the whole window");
      }
      for (std::size_t c = 0; c < m; ++c) CopyShare(scores, l * m + c, imp, sink + c);
    }
    const int bits = model::ImportanceBits(frac_bits_, e, static_cast<int>(full_->heads().n_heads));
    MPCACHE_ASSIGN_OR_RETURN(selection, mpc::RowRankSelection<P>(ctx_, scores, nl, m, keep, bits));
  }
  for (int layer = 0; layer < layers; ++layer) {
    const auto l = static_cast<std::size_t>(layer);
    const auto& kb = full_->key_blocks(layer);
    const auto& vb = full_->value_blocks(layer);
    const auto row_into = [&](Shares<P>& to, std::size_t at, const mpc::FixedBlock<P>& b,
                              std::size_t off) {
      for (std::size_t i = 0; i < kv; ++i) CopyShare(to, at + i, b.x, off + i);
    };
    const std::size_t kept = static_cast<std::size_t>(e.kept());
    Shares<P> k(kept * kv), v(kept * kv);
    std::size_t at = 0;
    for (std::size_t t = 0; t < sink; ++t, ++at) {
      row_into(k, at * kv, kb[t / bt], (t % bt) * kv);
      row_into(v, at * kv, vb[t / bt], (t % bt) * kv);
    }
    if (keep > 0) {
      // [K | V] of the candidates (m x 2 kv), gathered by E_l (keep x m) in one product.
      Shares<P> cand(m * 2 * kv);
      for (std::size_t c = 0; c < m; ++c) {
        const std::size_t t = sink + c;
        row_into(cand, c * 2 * kv, kb[t / bt], (t % bt) * kv);
        row_into(cand, c * 2 * kv + kv, vb[t / bt], (t % bt) * kv);
      }
      MPCACHE_ASSIGN_OR_RETURN(
          Shares<P> picked,
          mpc::MatMul<P>(ctx, selection.Slice(l * keep * m, keep * m), cand, keep, m, 2 * kv));
      for (std::size_t j = 0; j < keep; ++j, ++at) {
        for (std::size_t i = 0; i < kv; ++i) {
          CopyShare(k, at * kv + i, picked, j * 2 * kv + i);
          CopyShare(v, at * kv + i, picked, j * 2 * kv + kv + i);
        }
      }
    }
    for (auto t = static_cast<std::size_t>(e.observe_from());
         t < static_cast<std::size_t>(e.prompt); ++t, ++at) {
      row_into(k, at * kv, kb[t / bt], (t % bt) * kv);
      row_into(v, at * kv, vb[t / bt], (t % bt) * kv);
    }
    MPCACHE_RETURN_IF_ERROR(full_->Compact(ctx, layer, k, v));
    reps_[l] = Reps{};  // the clusters are new
    selection_[l] = Selection{};
  }
  importance_.clear();
  return Status::Ok();
}

template <typename P>
Status MpcacheKv<P>::EndPrefill(mpc::Context<P>& ctx, int window) {
  if (eviction_ && eviction_->evicts()) MPCACHE_RETURN_IF_ERROR(Evict(ctx));
  // The representatives the next step's selection needs, now rather than in that step.
  for (int l = 0; l < layout().n_layers(); ++l) {
    const model::SelectionShape next = model::ShapeFor(policy_, layout().length(l) + 1);
    if (next.selects() && policy_.SelectingLayer(l) == l) {
      MPCACHE_RETURN_IF_ERROR(
          UpdateRepresentatives(ctx, l, static_cast<std::size_t>(next.candidates)));
    }
  }
  return full_->EndPrefill(ctx, window);
}

template class MpcacheKv<mpc::SemiHonest>;
template class MpcacheKv<mpc::Spdz2k>;

}  // namespace mpcache::infer
