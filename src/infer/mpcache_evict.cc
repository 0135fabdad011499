// MpcacheKv's static look-once eviction (infer/mpcache_kv.h): the prompt's announcement,
// the observation window's importance, the eviction itself and the end-of-prefill hook.
#include <string>

#include "infer/mpcache_kv.h"
#include "mpc/compare/rank_select.h"
#include "net/comm_stats.h"

namespace mpcache::infer {

using mpc::Shares;

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
  if (!Observing(length)) return;
  const std::size_t nh = full_->heads().n_heads, L = static_cast<std::size_t>(length);
  Shares<P>& imp = importance_[static_cast<std::size_t>(layer)];
  if (imp.size() < L) {
    Shares<P> grown(L);
    for (std::size_t t = 0; t < imp.size(); ++t) grown.CopyFrom(t, imp, t);
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
  // Impact re-weighting: the candidates' importance rides in the gather as one more column.
  const bool impact = policy_.impact_weight > 0;
  const std::size_t width = 2 * kv + (impact ? 1 : 0);
  const std::uint64_t mult[] = {
      model::ImpactMultiplier(policy_, e, static_cast<int>(full_->heads().n_heads),
                              static_cast<int>(full_->heads().head_size), frac_bits_)};
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
      for (std::size_t c = 0; c < m; ++c) scores.CopyFrom(l * m + c, imp, sink + c);
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
      for (std::size_t i = 0; i < kv; ++i) to.CopyFrom(at + i, b.x, off + i);
    };
    const std::size_t kept = static_cast<std::size_t>(e.kept());
    const Shares<P>& imp = importance_[l];
    if (impact && imp.size() < static_cast<std::size_t>(e.prompt)) {
      return Internal("MPCache eviction: layer " + std::to_string(l) +
                      " was not observed over the whole window");
    }
    Shares<P> k(kept * kv), v(kept * kv), bias(impact ? kept : 0);
    std::size_t at = 0;
    for (std::size_t t = 0; t < sink; ++t, ++at) {
      row_into(k, at * kv, kb[t / bt], (t % bt) * kv);
      row_into(v, at * kv, vb[t / bt], (t % bt) * kv);
      if (impact) bias.CopyFrom(at, imp, t);
    }
    if (keep > 0) {
      // [K | V (| importance)] of the candidates (m x width), gathered by E_l (keep x m) in
      // one product.
      Shares<P> cand(m * width);
      for (std::size_t c = 0; c < m; ++c) {
        const std::size_t t = sink + c;
        row_into(cand, c * width, kb[t / bt], (t % bt) * kv);
        row_into(cand, c * width + kv, vb[t / bt], (t % bt) * kv);
        if (impact) cand.CopyFrom(c * width + 2 * kv, imp, t);
      }
      MPCACHE_ASSIGN_OR_RETURN(
          Shares<P> picked,
          mpc::MatMul<P>(ctx, selection.Slice(l * keep * m, keep * m), cand, keep, m, width));
      for (std::size_t j = 0; j < keep; ++j, ++at) {
        for (std::size_t i = 0; i < kv; ++i) {
          k.CopyFrom(at * kv + i, picked, j * width + i);
          v.CopyFrom(at * kv + i, picked, j * width + kv + i);
        }
        if (impact) bias.CopyFrom(at, picked, j * width + 2 * kv);
      }
    }
    for (auto t = static_cast<std::size_t>(e.observe_from());
         t < static_cast<std::size_t>(e.prompt); ++t, ++at) {
      row_into(k, at * kv, kb[t / bt], (t % bt) * kv);
      row_into(v, at * kv, vb[t / bt], (t % bt) * kv);
      if (impact) bias.CopyFrom(at, imp, t);
    }
    if (impact) {
      mpc::MulPublicInPlace(bias, std::span<const std::uint64_t>(mult));
      impact_[l] = std::move(bias);
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
    MPCACHE_RETURN_IF_ERROR(UpdateMeans(ctx, l, static_cast<std::size_t>(next.residual_columns())));
  }
  return full_->EndPrefill(ctx, window);
}

// The class is instantiated in mpcache_kv.cc; these are its members defined here.
// NOLINTBEGIN(bugprone-macro-parentheses): P names a type.
#define MPCACHE_EVICT_MEMBERS(P)                                   \
  template Status MpcacheKv<P>::BeginPrompt(int);                  \
  template void MpcacheKv<P>::Observe(int, int, const Shares<P>&); \
  template Status MpcacheKv<P>::Evict(mpc::Context<P>&);           \
  template Status MpcacheKv<P>::EndPrefill(mpc::Context<P>&, int);
MPCACHE_EVICT_MEMBERS(mpc::SemiHonest)
MPCACHE_EVICT_MEMBERS(mpc::Spdz2k)
#undef MPCACHE_EVICT_MEMBERS
// NOLINTEND(bugprone-macro-parentheses)

}  // namespace mpcache::infer
