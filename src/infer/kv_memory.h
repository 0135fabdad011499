// The secure forward's KV memory: one interface, whatever the cache policy. The public side
// (which block holds which position, what a step attends) is model::KvLayout, the same code
// the plaintext engines run; an implementation adds the shares and the two attention
// products. Per step and layer, in this order:
//   Prepare()           once per step, before the layers: fetches what the step's appends
//                       need (a new block's masks) and returns the step's plan, the
//                       attention triples it will take, in order (announced to the
//                       preprocessing, so a remote dealer is asked for all of them at once);
//   Append(l, k, v)     the token's roped key and value rows (kv_dim each);
//   Plan(l)             the public shape of what the layer's attention reads;
//   Scores(l, plan, q)  raw q . k_t for every head and planned row (n_heads x L);
//   Mix(l, plan, p)     raw sum_t p[h, t] v_t (dim values);
// and BeginPrompt(n) before the prompt's first position (a policy may score the cache with
// the prompt's last queries, from Mix's weights or ObserveScores' sigmoids), EndPrefill(window)
// once after it (a policy's eviction point).
// LoadPrefill appends many secret rows of a layer at once (one round): a long context's prefill.
#pragma once

#include <vector>

#include "model/kv_layout.h"
#include "mpc/context.h"

namespace mpcache::infer {

template <typename P>
class KvMemory {
 public:
  virtual ~KvMemory() = default;

  virtual const model::KvLayout& layout() const = 0;
  // The position the next token takes (tokens appended to every layer so far).
  int position() const { return layout().position(); }
  int max_seq_len() const { return layout().max_seq_len(); }

  virtual Result<std::vector<mpc::AttentionShape>> Prepare(mpc::Context<P>& ctx) = 0;
  virtual Status Append(mpc::Context<P>& ctx, int layer, mpc::Shares<P> k, mpc::Shares<P> v) = 0;
  virtual model::KvPlan Plan(int layer) const { return layout().Plan(layer); }
  virtual Result<mpc::Shares<P>> Scores(mpc::Context<P>& ctx, int layer, const model::KvPlan& plan,
                                        const mpc::Shares<P>& q) = 0;
  virtual Result<mpc::Shares<P>> Mix(mpc::Context<P>& ctx, int layer, const model::KvPlan& plan,
                                     const mpc::Shares<P>& probs) = 0;
  virtual Status BeginPrompt(int /*prompt_len*/) { return Status::Ok(); }
  // A policy that scores the prompt by the sigmoid of its queries' scaled scores (MPCache's
  // eviction_score: sigmoid) asks for them at this step of `layer`: the engine then passes
  // Sigmoid(s) (n_heads x the columns Scores returned, s the softmax's input) before Mix.
  virtual bool ObservesScores(int /*layer*/) const { return false; }
  virtual Status ObserveScores(int /*layer*/, mpc::Shares<P> /*sigmoid*/) { return Status::Ok(); }
  // What a policy revealed to the parties (MPCache's reveal: plain | dp) and the
  // differential-privacy budget that spent; nothing for the full cache.
  virtual std::uint64_t revealed_selections() const { return 0; }
  virtual double epsilon_spent() const { return 0.0; }
  virtual Status EndPrefill(mpc::Context<P>& ctx, int window) = 0;
  // k, v: n x kv_dim secret rows of `layer` in position order.
  virtual Status LoadPrefill(mpc::Context<P>& ctx, int layer, const mpc::Shares<P>& k,
                             const mpc::Shares<P>& v) = 0;
};

}  // namespace mpcache::infer
