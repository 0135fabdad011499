// The full KV cache under MPC: every cached position of a layer is attended at every step.
// Shares live in blocks of model::KvLayout (block_tokens rows x kv_dim, the row of position t
// = its key or value, head-major), each block masked ONCE with its own dealer matrix mask:
// appending a row opens D = X - A for that row only (the key and value rows of a layer, 2 x
// kv_dim values, riding the layer's scores opening: no round of their own), and the products
// of later steps open only the fresh operand, once per layer and step, against all blocks
// (mpc/attention_product.h):
//   scores: 1 round, dim values          (n_heads x head_size)
//   mix:    1 round, n_heads x L values  (L = cached positions)
// so per layer and step the attention's party-to-party bytes grow as O(L x n_heads) (the
// softmax's comparisons dominate), not O(L x dim). Block metadata (positions, plans) is the
// layout's; this class holds the shares and the mask ids.
#pragma once

#include <memory>
#include <vector>

#include "infer/kv_memory.h"
#include "model/weights.h"
#include "mpc/attention_product.h"

namespace mpcache::infer {

template <typename P>
class SecureKvCache final : public KvMemory<P> {
 public:
  static Result<std::unique_ptr<SecureKvCache>> Create(const model::ModelConfig& config,
                                                       int max_seq_len, int block_tokens);

  const model::KvLayout& layout() const override { return layout_; }
  int length(int layer) const { return layout_.length(layer); }

  Result<std::vector<mpc::AttentionShape>> Prepare(mpc::Context<P>& ctx) override;
  // The row's D = X - A rides the session's next exchange (mpc::DeferRows): the layer's
  // scores carry it, so an append costs no round of its own.
  Status Append(mpc::Context<P>& ctx, int layer, mpc::Shares<P> k, mpc::Shares<P> v) override;
  Result<mpc::Shares<P>> Scores(mpc::Context<P>& ctx, int layer, const model::KvPlan& plan,
                                const mpc::Shares<P>& q) override;
  Result<mpc::Shares<P>> Mix(mpc::Context<P>& ctx, int layer, const model::KvPlan& plan,
                             const mpc::Shares<P>& probs) override;
  Status EndPrefill(mpc::Context<P>& ctx, int window) override;

  // All D rows of the n rows opened in one round.
  Status LoadPrefill(mpc::Context<P>& ctx, int layer, const mpc::Shares<P>& k,
                     const mpc::Shares<P>& v) override;

  // For a policy built on this cache (infer/mpcache_kv.h): the blocks a plan reads, the
  // blocks themselves, and making sure a layer has its blocks' masks.
  const mpc::HeadShape& heads() const { return heads_; }
  Result<std::vector<mpc::BlockUse<P>>> KeyUses(int layer, const model::KvPlan& plan) const {
    return Uses(keys_[static_cast<std::size_t>(layer)], plan);
  }
  Result<std::vector<mpc::BlockUse<P>>> ValueUses(int layer, const model::KvPlan& plan) const {
    return Uses(values_[static_cast<std::size_t>(layer)], plan);
  }
  const std::vector<mpc::FixedBlock<P>>& key_blocks(int layer) const {
    return keys_[static_cast<std::size_t>(layer)];
  }
  const std::vector<mpc::FixedBlock<P>>& value_blocks(int layer) const {
    return values_[static_cast<std::size_t>(layer)];
  }
  // Eviction: `layer`'s blocks are dropped (their masks never used again) and the kept rows
  // k, v (n x kv_dim each, the policy's order) appended anew under fresh masks, one round.
  Status Compact(mpc::Context<P>& ctx, int layer, const mpc::Shares<P>& k, const mpc::Shares<P>& v);
  // Makes sure `layer` has `blocks` blocks (fetching each new block's two masks).
  Status EnsureBlocks(mpc::Context<P>& ctx, int layer, int blocks);

 private:
  SecureKvCache(model::KvLayout layout, const mpc::HeadShape& heads)
      : layout_(std::move(layout)),
        heads_(heads),
        keys_(static_cast<std::size_t>(layout_.n_layers())),
        values_(static_cast<std::size_t>(layout_.n_layers())) {}
  Result<std::vector<mpc::BlockUse<P>>> Uses(const std::vector<mpc::FixedBlock<P>>& blocks,
                                             const model::KvPlan& plan) const;
  // Rows k, v of `layer` placed in their blocks (layout advanced, blocks fetched).
  Result<std::vector<std::pair<mpc::FixedBlock<P>*, mpc::Shares<P>>>> StageRows(
      mpc::Context<P>& ctx, int layer, const mpc::Shares<P>& k, const mpc::Shares<P>& v);
  // Opens any deferred append still waiting (one round, only then), before the blocks move.
  Status Settle(mpc::Context<P>& ctx);

  model::KvLayout layout_;
  mpc::HeadShape heads_;
  std::vector<std::vector<mpc::FixedBlock<P>>> keys_, values_;   // [layer][block]
  std::vector<std::shared_ptr<mpc::DeferredRows<P>>> deferred_;  // appends whose D may wait
};

}  // namespace mpcache::infer
