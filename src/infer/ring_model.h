// RingModel: a Llama-2 model's weights as ring encodings (Z_2^64, f fractional bits), laid
// out for the secure forward: q/k/v stacked into one (dim + 2 kv_dim) x dim matrix and
// w1/w3 into one (2 hidden) x dim matrix, so one product (one opening in private mode)
// serves each group. The same type holds either the clear encodings (public weights, read
// by every party) or one party's additive share of them (private weights, share files).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"
#include "model/weights.h"

namespace mpcache::infer {

using RingVec = std::vector<std::uint64_t>;

struct RingLayer {
  RingVec rms_att;  // (dim)
  RingVec wqkv;     // (dim + 2 kv_dim, dim): rows of wq, then wk, then wv
  RingVec wo;       // (dim, dim)
  RingVec rms_ffn;  // (dim)
  RingVec w13;      // (2 hidden_dim, dim): rows of w1 (gate), then w3 (up)
  RingVec w2;       // (dim, hidden_dim)
};

struct RingModel {
  model::ModelConfig config;
  int frac_bits = 0;
  RingVec embedding;  // (vocab, dim)
  std::vector<RingLayer> layers;
  RingVec rms_final;  // (dim)
  RingVec wcls;       // (vocab, dim); empty when the classifier is shared

  std::span<const std::uint64_t> classifier() const {
    return config.shared_classifier ? std::span<const std::uint64_t>(embedding) : wcls;
  }
  // Visits every tensor in a fixed order (file layout, input order): name and storage.
  void ForEachTensor(const std::function<void(const std::string&, RingVec&)>& f);
  void ForEachTensor(const std::function<void(const std::string&, const RingVec&)>& f) const;
  // Expected element count of a tensor visited by ForEachTensor, by name.
  Result<std::size_t> ExpectedSize(const std::string& name) const;
  Status CheckShapes() const;
};

// Encodes float weights at `frac_bits` (round to nearest).
Result<std::shared_ptr<const RingModel>> EncodeModel(const model::ModelWeights& weights,
                                                     int frac_bits);

}  // namespace mpcache::infer
