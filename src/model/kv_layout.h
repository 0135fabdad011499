// The KV memory's public side (llama.cpp's plan-then-apply shape): where each cached
// position of a layer sits, and what one step's attention reads. It holds no K or V data,
// only block metadata, so ONE copy of this policy code drives the plaintext engines (their
// K/V in PlainKvCache below) and the secure cache (infer/kv_memory.h, shares in blocks).
//
// Layout: per layer, blocks of `block_tokens` rows; position t of a layer is row t %
// block_tokens of block t / block_tokens, in append order. A block's data is laid out
// [max_tokens][features] (row-major rows of kv_dim), and the secure cache masks each block
// once with one fixed mask.
//
// Plan(layer): the public shape of the next attention of `layer` — the blocks it reads and
// how many rows of each, in order. The full cache reads every stored row; a cache policy
// (eviction at the end of the prefill, per-step selection) changes only this class's plan.
// Every size a step needs (its preprocessing, its openings) follows from the plans.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "common/result.h"

namespace mpcache::model {

struct KvBlockUse {
  int block = 0;
  int rows = 0;
  bool operator==(const KvBlockUse&) const = default;
};

struct KvPlan {
  std::vector<KvBlockUse> blocks;  // in cache order
  int length() const {
    int n = 0;
    for (const KvBlockUse& b : blocks) n += b.rows;
    return n;
  }
  bool operator==(const KvPlan&) const = default;
};

class KvLayout {
 public:
  static constexpr int kDefaultBlockTokens = 64;

  // n_layers >= 1, max_seq_len >= 1, block_tokens >= 1 (capped at max_seq_len).
  static Result<KvLayout> Create(int n_layers, int max_seq_len, int block_tokens);

  int n_layers() const { return static_cast<int>(length_.size()); }
  int max_seq_len() const { return max_seq_len_; }
  int block_tokens() const { return block_tokens_; }
  // Rows stored in `layer`, and the blocks they occupy.
  int length(int layer) const { return length_[static_cast<std::size_t>(layer)]; }
  int blocks(int layer) const { return (length(layer) + block_tokens_ - 1) / block_tokens_; }
  // The position the next token gets: tokens whose every layer has been appended (evicted
  // rows included: a position is counted once appended, whatever is kept of it).
  int position() const;
  // Rows of `layer` evicted so far (length + evicted = positions appended to the layer).
  int evicted(int layer) const { return evicted_[static_cast<std::size_t>(layer)]; }

  struct Slot {
    int block = 0, row = 0;
    bool opens_block = false;  // the first row of a new block
  };
  // Reserves the next row of `layer`; refuses (naming the limit) past max_seq_len.
  Result<Slot> Append(int layer);
  // What the next attention of `layer` reads (full cache: every stored row, in order).
  KvPlan Plan(int layer) const { return PlanAt(layer, length(layer)); }
  // The plan once `layer` holds `length` rows (a step states its whole need before it
  // appends: PlanAt(l, length(l) + 1)).
  KvPlan PlanAt(int layer, int length) const;
  // End of the prefill: `window` = the last positions of the prompt (the observation
  // window a policy may score the cache with). The full cache keeps everything.
  Status EndPrefill(int window);
  bool prefill_done() const { return prefill_done_; }
  // Eviction: `layer` drops all its rows, counted as evicted, and the caller appends the
  // `kept` rows it keeps again (in their new order); before the end of the prefill only.
  Status Compact(int layer, int kept);

 private:
  KvLayout(int n_layers, int max_seq_len, int block_tokens)
      : max_seq_len_(max_seq_len),
        block_tokens_(block_tokens),
        length_(static_cast<std::size_t>(n_layers), 0),
        evicted_(static_cast<std::size_t>(n_layers), 0) {}
  int max_seq_len_ = 0, block_tokens_ = 0;
  std::vector<int> length_, evicted_;
  bool prefill_done_ = false;
};

// Plaintext K/V in the layout's blocks (T = float for the float engine, Ring64 for the
// fixed-point one): the engines attend exactly the rows the plan names, as the secure
// cache does.
template <typename T>
class PlainKvCache {
 public:
  PlainKvCache(KvLayout layout, std::size_t kv_dim)
      : layout_(std::move(layout)),
        kv_dim_(kv_dim),
        keys_(static_cast<std::size_t>(layout_.n_layers())),
        values_(static_cast<std::size_t>(layout_.n_layers())) {}

  KvLayout& layout() { return layout_; }
  const KvLayout& layout() const { return layout_; }
  std::size_t kv_dim() const { return kv_dim_; }

  // Appends the rows k, v (kv_dim each) to `layer`.
  Status Append(int layer, std::span<const T> k, std::span<const T> v);
  // Eviction: `layer` keeps only the rows `kept` (indices of its current rows), in that
  // order; the others are gone (KvLayout::Compact).
  Status Compact(int layer, std::span<const int> kept);
  // Row `row` of block `block` of `layer` (kv_dim values).
  const T* Key(int layer, int block, int row) const {
    return keys_[static_cast<std::size_t>(layer)][static_cast<std::size_t>(block)].data() +
           static_cast<std::size_t>(row) * kv_dim_;
  }
  const T* Value(int layer, int block, int row) const {
    return values_[static_cast<std::size_t>(layer)][static_cast<std::size_t>(block)].data() +
           static_cast<std::size_t>(row) * kv_dim_;
  }

 private:
  KvLayout layout_;
  std::size_t kv_dim_;
  std::vector<std::vector<std::vector<T>>> keys_, values_;  // [layer][block][rows x kv_dim]
};

}  // namespace mpcache::model
