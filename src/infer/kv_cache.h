// The secret-shared KV cache of the secure forward. Every appended K row and V row is
// masked ONCE with its own dealer matrix mask (D = X - A opened when appended, both rows of
// a layer in one round) and never re-opened: each later step's products with it open only
// the fresh operand (the query, or the attention weights) under a fixed-mask matrix triple.
//
// Layout per cached position t of a layer (hs = head size, g = kv heads):
//   K_t as an hs x g matrix (column j = head j's key), so Q (n_heads x hs) . K_t gives
//     every (head, kv head) pair; head h keeps the entry of its own kv head h / group.
//   V_t as a g x hs matrix; the weights of position t form an n_heads x g matrix with
//     p[h, t] at (h, h / group) and zeros elsewhere, so the product is p[h, t] V_t[h/group].
// Cost per layer and step with L cached positions: Scores 1 round opening L x dim values;
// Mix 1 round opening L x n_heads x g values (each to both peers, 8 bytes per value).
#pragma once

#include <vector>

#include "model/weights.h"
#include "mpc/matmul.h"

namespace mpcache::infer {

template <typename P>
class SecureKvCache {
 public:
  SecureKvCache(const model::ModelConfig& config, int max_seq_len);

  int length(int layer) const { return static_cast<int>(keys_[layer].size()); }
  int max_seq_len() const { return max_seq_len_; }

  // Appends the (roped) key row k and the value row v (kv_dim each) of `layer`, masking
  // both once (1 round).
  Status Append(mpc::Context<P>& ctx, int layer, mpc::Shares<P> k, mpc::Shares<P> v);
  // Raw scores q . k_t (2f fractional bits) for every head and cached position, as an
  // n_heads x length matrix (1 round). q: dim values (head-major).
  Result<mpc::Shares<P>> Scores(mpc::Context<P>& ctx, int layer, const mpc::Shares<P>& q);
  // Raw sum_t p[h, t] v_t (2f fractional bits) for every head: dim values (1 round).
  // probs: n_heads x length.
  Result<mpc::Shares<P>> Mix(mpc::Context<P>& ctx, int layer, const mpc::Shares<P>& probs);

 private:
  std::size_t hs_, n_heads_, n_kv_, group_;
  int max_seq_len_;
  std::vector<std::vector<mpc::FixedOperand<P>>> keys_, values_;  // [layer][position]
};

}  // namespace mpcache::infer
