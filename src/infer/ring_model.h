// RingModel: a Llama-2 model's weights as ring encodings (Z_2^64, f fractional bits), laid
// out for the secure forward: q/k/v stacked into one (dim + 2 kv_dim) x dim matrix and
// w1/w3 into one (2 hidden) x dim matrix, so one product (one opening in private mode)
// serves each group. The same type holds either the clear encodings (public weights, read
// by every party) or one party's additive share of them (private weights, share files).
//
// Compact public weights: a RingModel may instead point at a CompactModel (GGUF Q8_0/F16 in
// one read-only memory map, model/compact_model.h). Then only the gains are encoded here and
// every matrix is empty: the products read the mapped integers directly (value x 2^24, one
// truncation by 24 bits; infer/secure_weights.h), so a 7B model costs its 7 GB file once in
// the page cache instead of 8 bytes per weight per process.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"
#include "model/compact_model.h"
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
  // Compact public weights: the matrices above are empty and live here (shared, mapped).
  std::shared_ptr<const model::CompactModel> compact;

  bool is_compact() const { return compact != nullptr; }

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
// Public weights kept compact: the gains encoded at `frac_bits`, the matrices in `compact`.
Result<std::shared_ptr<const RingModel>> EncodeCompactModel(
    std::shared_ptr<const model::CompactModel> compact, int frac_bits);

// The public model of a checkpoint file: a GGUF whose matrices are all Q8_0/F16 stays
// compact (memory-mapped, EncodeCompactModel); any other checkpoint is loaded as float32
// and encoded (EncodeModel). `progress` (optional) sees the compact file being checked.
Result<std::shared_ptr<const RingModel>> LoadRingModel(
    const std::string& path, int frac_bits,
    const std::function<void(std::uint64_t, std::uint64_t)>& progress = {});

}  // namespace mpcache::infer
