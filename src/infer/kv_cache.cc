#include "infer/kv_cache.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace mpcache::infer {

using mpc::Shares;

template <typename P>
Result<std::unique_ptr<SecureKvCache<P>>> SecureKvCache<P>::Create(const model::ModelConfig& c,
                                                                   int max_seq_len,
                                                                   int block_tokens) {
  MPCACHE_ASSIGN_OR_RETURN(model::KvLayout layout,
                           model::KvLayout::Create(c.n_layers, max_seq_len, block_tokens));
  const mpc::HeadShape heads{static_cast<std::size_t>(c.n_heads),
                             static_cast<std::size_t>(c.head_size()),
                             static_cast<std::size_t>(c.kv_dim())};
  return std::unique_ptr<SecureKvCache>(new SecureKvCache(std::move(layout), heads));
}

template <typename P>
Status SecureKvCache<P>::EnsureBlocks(mpc::Context<P>& ctx, int layer, int blocks) {
  const std::size_t rows = static_cast<std::size_t>(layout_.block_tokens()), kv = heads_.kv_dim;
  auto& ks = keys_[static_cast<std::size_t>(layer)];
  auto& vs = values_[static_cast<std::size_t>(layer)];
  // New blocks may move the old ones: a deferred append's D must land first.
  if (static_cast<int>(ks.size()) < blocks) MPCACHE_RETURN_IF_ERROR(Settle(ctx));
  while (static_cast<int>(ks.size()) < blocks) {
    for (auto* list : {&ks, &vs}) {
      MPCACHE_ASSIGN_OR_RETURN(mpc::MatrixMask<P> mask, ctx.prep().GetMatrixMask(rows, kv));
      mpc::FixedBlock<P> b;
      b.mask_id = mask.id;
      b.capacity = rows;
      b.x = Shares<P>(rows * kv);
      b.a = std::move(mask.a);
      b.d.reserve(rows * kv);
      list->push_back(std::move(b));
    }
  }
  return Status::Ok();
}

template <typename P>
Result<std::vector<mpc::BlockUse<P>>> SecureKvCache<P>::Uses(
    const std::vector<mpc::FixedBlock<P>>& blocks, const model::KvPlan& plan) const {
  std::vector<mpc::BlockUse<P>> out;
  for (const model::KvBlockUse& u : plan.blocks) {
    if (u.block < 0 || static_cast<std::size_t>(u.block) >= blocks.size() || u.rows < 0) {
      return InvalidArgument("KV plan names block " + std::to_string(u.block) + " of " +
                             std::to_string(blocks.size()));
    }
    out.push_back({&blocks[static_cast<std::size_t>(u.block)], static_cast<std::size_t>(u.rows)});
  }
  return out;
}

template <typename P>
Result<std::vector<mpc::AttentionShape>> SecureKvCache<P>::Prepare(mpc::Context<P>& ctx) {
  std::vector<mpc::AttentionShape> plan;
  for (int l = 0; l < layout_.n_layers(); ++l) {
    if (layout_.length(l) >= layout_.max_seq_len()) break;  // Append will refuse
    const model::KvPlan next = layout_.PlanAt(l, layout_.length(l) + 1);
    const int blocks = next.blocks.empty() ? 0 : next.blocks.back().block + 1;
    MPCACHE_RETURN_IF_ERROR(EnsureBlocks(ctx, l, blocks));
    // The very shapes Scores and Mix will ask for.
    MPCACHE_ASSIGN_OR_RETURN(auto keys, Uses(keys_[static_cast<std::size_t>(l)], next));
    MPCACHE_ASSIGN_OR_RETURN(auto values, Uses(values_[static_cast<std::size_t>(l)], next));
    plan.push_back(mpc::ShapeOf(mpc::MaskSide::kRight, heads_, keys));
    plan.push_back(mpc::ShapeOf(mpc::MaskSide::kLeft, heads_, values));
  }
  MPCACHE_RETURN_IF_ERROR(ctx.prep().Announce(plan));
  return plan;
}

template <typename P>
Status SecureKvCache<P>::Settle(mpc::Context<P>& ctx) {
  bool waiting = false;
  for (const auto& d : deferred_) waiting = waiting || !d->done();
  if (waiting) MPCACHE_RETURN_IF_ERROR(ctx.FlushDeferred());
  for (const auto& d : deferred_) {
    if (!d->done()) return Internal("KV cache: a deferred append was not opened by a flush");
  }
  deferred_.clear();
  return Status::Ok();
}

template <typename P>
Status SecureKvCache<P>::Append(mpc::Context<P>& ctx, int layer, Shares<P> k, Shares<P> v) {
  const std::size_t kv = heads_.kv_dim;
  if (k.size() != kv || v.size() != kv) {
    return InvalidArgument("KV rows must have kv_dim = " + std::to_string(kv) + " values");
  }
  MPCACHE_ASSIGN_OR_RETURN(auto rows, StageRows(ctx, layer, k, v));
  // The row's D rides the next exchange (this layer's scores): no round of its own.
  MPCACHE_ASSIGN_OR_RETURN(auto source, mpc::DeferRows<P>(ctx, std::move(rows)));
  std::erase_if(deferred_, [](const auto& d) { return d->done(); });
  deferred_.push_back(std::move(source));
  return Status::Ok();
}

template <typename P>
Status SecureKvCache<P>::LoadPrefill(mpc::Context<P>& ctx, int layer, const Shares<P>& k,
                                     const Shares<P>& v) {
  MPCACHE_ASSIGN_OR_RETURN(auto rows, StageRows(ctx, layer, k, v));
  return mpc::AppendRows<P>(ctx, std::move(rows));
}

template <typename P>
Result<std::vector<std::pair<mpc::FixedBlock<P>*, Shares<P>>>> SecureKvCache<P>::StageRows(
    mpc::Context<P>& ctx, int layer, const Shares<P>& k, const Shares<P>& v) {
  const std::size_t kv = heads_.kv_dim;
  if (layer < 0 || layer >= layout_.n_layers() || k.size() % kv != 0 || v.size() != k.size()) {
    return InvalidArgument("KV prefill: layer " + std::to_string(layer) + " with " +
                           std::to_string(k.size()) + " key and " + std::to_string(v.size()) +
                           " value shares (whole rows of kv_dim " + std::to_string(kv) +
                           " each, as many of both)");
  }
  const std::size_t n = k.size() / kv;
  if (static_cast<std::size_t>(layout_.length(layer)) + n >
      static_cast<std::size_t>(layout_.max_seq_len())) {
    return InvalidArgument("KV prefill of " + std::to_string(n) + " rows into a layer holding " +
                           std::to_string(layout_.length(layer)) + " of " +
                           std::to_string(layout_.max_seq_len()) + ": raise max_seq_len");
  }
  const auto l = static_cast<std::size_t>(layer);
  std::vector<std::pair<mpc::FixedBlock<P>*, Shares<P>>> rows;
  std::vector<int> blocks;
  for (std::size_t i = 0; i < n; ++i) {
    MPCACHE_ASSIGN_OR_RETURN(model::KvLayout::Slot slot, layout_.Append(layer));
    blocks.push_back(slot.block);
    MPCACHE_RETURN_IF_ERROR(EnsureBlocks(ctx, layer, slot.block + 1));
  }
  for (std::size_t i = 0; i < n; ++i) {
    const auto b = static_cast<std::size_t>(blocks[i]);
    rows.emplace_back(&keys_[l][b], k.Slice(i * kv, kv));
    rows.emplace_back(&values_[l][b], v.Slice(i * kv, kv));
  }
  return rows;
}

template <typename P>
Result<Shares<P>> SecureKvCache<P>::Scores(mpc::Context<P>& ctx, int layer,
                                           const model::KvPlan& plan, const Shares<P>& q) {
  if (layer < 0 || layer >= layout_.n_layers()) return InvalidArgument("KV scores: bad layer");
  MPCACHE_ASSIGN_OR_RETURN(auto uses, Uses(keys_[static_cast<std::size_t>(layer)], plan));
  return mpc::AttentionScores<P>(ctx, heads_, q, uses);
}

template <typename P>
Result<Shares<P>> SecureKvCache<P>::Mix(mpc::Context<P>& ctx, int layer, const model::KvPlan& plan,
                                        const Shares<P>& probs) {
  if (layer < 0 || layer >= layout_.n_layers()) return InvalidArgument("KV mix: bad layer");
  MPCACHE_ASSIGN_OR_RETURN(auto uses, Uses(values_[static_cast<std::size_t>(layer)], plan));
  return mpc::AttentionMix<P>(ctx, heads_, probs, uses);
}

template <typename P>
Status SecureKvCache<P>::Compact(mpc::Context<P>& ctx, int layer, const Shares<P>& k,
                                 const Shares<P>& v) {
  const std::size_t kv = heads_.kv_dim;
  if (layer < 0 || layer >= layout_.n_layers() || k.size() % kv != 0 || v.size() != k.size()) {
    return InvalidArgument("KV eviction: layer " + std::to_string(layer) + " keeping " +
                           std::to_string(k.size()) + " key and " + std::to_string(v.size()) +
                           " value shares (whole rows of kv_dim " + std::to_string(kv) + ")");
  }
  MPCACHE_RETURN_IF_ERROR(Settle(ctx));  // the dropped blocks may await a deferred D
  MPCACHE_RETURN_IF_ERROR(layout_.Compact(layer, static_cast<int>(k.size() / kv)));
  keys_[static_cast<std::size_t>(layer)].clear();
  values_[static_cast<std::size_t>(layer)].clear();
  if (k.size() == 0) return Status::Ok();
  return LoadPrefill(ctx, layer, k, v);
}

template <typename P>
Status SecureKvCache<P>::EndPrefill(mpc::Context<P>& /*ctx*/, int window) {
  return layout_.EndPrefill(window);
}

template class SecureKvCache<mpc::SemiHonest>;
template class SecureKvCache<mpc::Spdz2k>;

}  // namespace mpcache::infer
