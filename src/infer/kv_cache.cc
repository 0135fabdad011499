#include "infer/kv_cache.h"

#include <string>

#include "mpc/fixed_batch.h"

namespace mpcache::infer {

using mpc::Shares;

template <typename P>
SecureKvCache<P>::SecureKvCache(const model::ModelConfig& c, int max_seq_len)
    : hs_(static_cast<std::size_t>(c.head_size())),
      n_heads_(static_cast<std::size_t>(c.n_heads)),
      n_kv_(static_cast<std::size_t>(c.n_kv_heads)),
      group_(static_cast<std::size_t>(c.kv_group())),
      max_seq_len_(max_seq_len),
      keys_(static_cast<std::size_t>(c.n_layers)),
      values_(static_cast<std::size_t>(c.n_layers)) {}

template <typename P>
Status SecureKvCache<P>::Append(mpc::Context<P>& ctx, int layer, Shares<P> k, Shares<P> v) {
  const std::size_t kv = hs_ * n_kv_;
  if (k.size() != kv || v.size() != kv) return InvalidArgument("KV rows must have kv_dim values");
  if (length(layer) >= max_seq_len_) {
    return InvalidArgument("the KV cache is full (" + std::to_string(max_seq_len_) + " positions)");
  }
  // K row (g x hs, head-major) transposed to hs x g.
  Shares<P> kt(kv);
  for (std::size_t j = 0; j < n_kv_; ++j) {
    for (std::size_t i = 0; i < hs_; ++i) {
      kt.v[i * n_kv_ + j] = k.v[j * hs_ + i];
      if constexpr (P::kMalicious) kt.m[i * n_kv_ + j] = k.m[j * hs_ + i];
    }
  }
  std::vector<mpc::FixedRequest<P>> req;
  req.push_back({std::move(kt), hs_, n_kv_});
  req.push_back({std::move(v), n_kv_, hs_});
  MPCACHE_ASSIGN_OR_RETURN(auto fixed, mpc::MaskFixedMany<P>(ctx, std::move(req)));
  keys_[layer].push_back(std::move(fixed[0]));
  values_[layer].push_back(std::move(fixed[1]));
  return Status::Ok();
}

template <typename P>
Result<Shares<P>> SecureKvCache<P>::Scores(mpc::Context<P>& ctx, int layer, const Shares<P>& q) {
  const auto& keys = keys_[layer];
  const std::size_t len = keys.size();
  if (q.size() != n_heads_ * hs_) return InvalidArgument("query must have dim values");
  mpc::FixedProductBatch<P> batch(ctx);
  for (const auto& kt : keys) batch.PrepareRight(q, n_heads_, kt);
  MPCACHE_RETURN_IF_ERROR(batch.Exchange());
  Shares<P> scores(n_heads_ * len);
  for (std::size_t t = 0; t < len; ++t) {
    const Shares<P> all = batch.Take(t);  // n_heads x g
    for (std::size_t h = 0; h < n_heads_; ++h) {
      const std::size_t src = h * n_kv_ + h / group_, dst = h * len + t;
      scores.v[dst] = all.v[src];
      if constexpr (P::kMalicious) scores.m[dst] = all.m[src];
    }
  }
  return scores;
}

template <typename P>
Result<Shares<P>> SecureKvCache<P>::Mix(mpc::Context<P>& ctx, int layer, const Shares<P>& probs) {
  const auto& values = values_[layer];
  const std::size_t len = values.size();
  if (probs.size() != n_heads_ * len) return InvalidArgument("weights must be n_heads x length");
  std::vector<Shares<P>> weights(len, Shares<P>(n_heads_ * n_kv_));
  for (std::size_t t = 0; t < len; ++t) {
    for (std::size_t h = 0; h < n_heads_; ++h) {
      const std::size_t src = h * len + t, dst = h * n_kv_ + h / group_;
      weights[t].v[dst] = probs.v[src];
      if constexpr (P::kMalicious) weights[t].m[dst] = probs.m[src];
    }
  }
  mpc::FixedProductBatch<P> batch(ctx);
  for (std::size_t t = 0; t < len; ++t) batch.PrepareRight(weights[t], n_heads_, values[t]);
  MPCACHE_RETURN_IF_ERROR(batch.Exchange());
  Shares<P> out(n_heads_ * hs_);
  for (std::size_t t = 0; t < len; ++t) mpc::AddInPlace(out, batch.Take(t));
  return out;
}

template class SecureKvCache<mpc::SemiHonest>;
template class SecureKvCache<mpc::Spdz2k>;

}  // namespace mpcache::infer
