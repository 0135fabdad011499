#include "model/kv_layout.h"

#include <algorithm>
#include <cstdint>
#include <string>

namespace mpcache::model {

Result<KvLayout> KvLayout::Create(int n_layers, int max_seq_len, int block_tokens) {
  if (n_layers < 1) return InvalidArgument("a KV memory needs at least one layer");
  if (max_seq_len < 1) {
    return InvalidArgument("KV memory length " + std::to_string(max_seq_len) +
                           " must be at least 1 (set max_seq_len, or 0 for the model's seq_len)");
  }
  if (block_tokens < 1) {
    return InvalidArgument("KV block size " + std::to_string(block_tokens) +
                           " must be at least 1 token (kv_block_tokens)");
  }
  return KvLayout(n_layers, max_seq_len, std::min(block_tokens, max_seq_len));
}

int KvLayout::position() const {
  int p = length_[0] + evicted_[0];
  for (std::size_t l = 1; l < length_.size(); ++l) p = std::min(p, length_[l] + evicted_[l]);
  return p;
}

Status KvLayout::Compact(int layer, int kept) {
  if (layer < 0 || layer >= n_layers()) {
    return InvalidArgument("KV eviction in layer " + std::to_string(layer) + " of a " +
                           std::to_string(n_layers()) + "-layer memory");
  }
  int& len = length_[static_cast<std::size_t>(layer)];
  if (prefill_done_ || kept < 0 || kept > len) {
    return InvalidArgument("KV eviction keeping " + std::to_string(kept) + " of " +
                           std::to_string(len) + " rows" +
                           (prefill_done_ ? " after the end of the prefill" : ""));
  }
  evicted_[static_cast<std::size_t>(layer)] += len - kept;
  len = 0;
  return Status::Ok();
}

Result<KvLayout::Slot> KvLayout::Append(int layer) {
  if (layer < 0 || layer >= n_layers()) {
    return InvalidArgument("KV append to layer " + std::to_string(layer) + " of a " +
                           std::to_string(n_layers()) + "-layer memory");
  }
  int& len = length_[static_cast<std::size_t>(layer)];
  if (len >= max_seq_len_) {
    return InvalidArgument("the KV cache is full (" + std::to_string(max_seq_len_) +
                           " positions): raise max_seq_len or generate fewer tokens");
  }
  const Slot s{len / block_tokens_, len % block_tokens_, len % block_tokens_ == 0};
  ++len;
  return s;
}

KvPlan KvLayout::PlanAt(int /*layer*/, int len) const {
  KvPlan plan;
  for (int b = 0; b * block_tokens_ < len; ++b) {
    plan.blocks.push_back({b, std::min(block_tokens_, len - b * block_tokens_)});
  }
  return plan;
}

Status KvLayout::EndPrefill(int window) {
  if (window < 0 || window > position()) {
    return InvalidArgument("observation window of " + std::to_string(window) +
                           " positions for a prefill of " + std::to_string(position()));
  }
  prefill_done_ = true;
  return Status::Ok();
}

template <typename T>
Status PlainKvCache<T>::Append(int layer, std::span<const T> k, std::span<const T> v) {
  if (k.size() != kv_dim_ || v.size() != kv_dim_) {
    return InvalidArgument("KV rows must have kv_dim = " + std::to_string(kv_dim_) + " values");
  }
  MPCACHE_ASSIGN_OR_RETURN(KvLayout::Slot s, layout_.Append(layer));
  auto& kb = keys_[static_cast<std::size_t>(layer)];
  auto& vb = values_[static_cast<std::size_t>(layer)];
  if (s.opens_block) {
    const std::size_t n = static_cast<std::size_t>(layout_.block_tokens()) * kv_dim_;
    kb.emplace_back(n, T{});
    vb.emplace_back(n, T{});
  }
  const std::size_t off = static_cast<std::size_t>(s.row) * kv_dim_;
  std::copy(k.begin(), k.end(), kb[static_cast<std::size_t>(s.block)].data() + off);
  std::copy(v.begin(), v.end(), vb[static_cast<std::size_t>(s.block)].data() + off);
  return Status::Ok();
}

template <typename T>
Status PlainKvCache<T>::Compact(int layer, std::span<const int> kept) {
  if (layer < 0 || layer >= layout_.n_layers()) {
    return InvalidArgument("KV eviction in layer " + std::to_string(layer));
  }
  const int len = layout_.length(layer), bt = layout_.block_tokens();
  std::vector<T> k, v;
  k.reserve(kept.size() * kv_dim_);
  v.reserve(kept.size() * kv_dim_);
  for (const int r : kept) {
    if (r < 0 || r >= len) {
      return InvalidArgument("KV eviction keeps row " + std::to_string(r) + " of " +
                             std::to_string(len));
    }
    const T* kr = Key(layer, r / bt, r % bt);
    const T* vr = Value(layer, r / bt, r % bt);
    k.insert(k.end(), kr, kr + kv_dim_);
    v.insert(v.end(), vr, vr + kv_dim_);
  }
  MPCACHE_RETURN_IF_ERROR(layout_.Compact(layer, static_cast<int>(kept.size())));
  keys_[static_cast<std::size_t>(layer)].clear();
  values_[static_cast<std::size_t>(layer)].clear();
  for (std::size_t i = 0; i < kept.size(); ++i) {
    MPCACHE_RETURN_IF_ERROR(Append(layer, std::span<const T>(k).subspan(i * kv_dim_, kv_dim_),
                                   std::span<const T>(v).subspan(i * kv_dim_, kv_dim_)));
  }
  return Status::Ok();
}

template class PlainKvCache<float>;
template class PlainKvCache<std::uint64_t>;

}  // namespace mpcache::model
