// The weights as one party holds them for the secure forward.
//
// weights: public — every party reads the same clear RingModel (shared read-only between
//   in-process parties); linear layers are local products (values and MAC shares alike)
//   and the RMSNorm gains are public constants turned into trivial sharings.
// weights: private — each party holds an additive share of the RingModel (its share file).
//   Loading (PrivateWeights): every party inputs its share through dealer input masks
//   (mpc::Input, 1 round per party), so [W] = [w_0] + [w_1] + [w_2] is MAC-authenticated
//   in malicious mode; then every matrix is masked ONCE (MaskFixedMany: D = W - A opened in
//   one round) and each later product opens only the fresh activation (fixed-mask matrix
//   triples, mpc/fixed_batch.h). docs/secure-llama.md argues the security.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "infer/ring_model.h"
#include "mpc/matmul.h"

namespace mpcache::infer {

// out = W x for W rows x cols (or, for the embedding, x W with x a 1 x rows one-hot).
template <typename P>
struct SecureLinear {
  std::size_t rows = 0, cols = 0;
  std::span<const std::uint64_t> pub;  // public weights (clear encodings)
  mpc::FixedOperand<P> fixed;          // private weights, masked once
  bool is_private() const { return pub.empty(); }
};

template <typename P>
struct SecureLayer {
  mpc::Shares<P> rms_att, rms_ffn;  // (dim) gains
  SecureLinear<P> wqkv;             // (dim + 2 kv_dim) x dim
  SecureLinear<P> wo;               // dim x dim
  SecureLinear<P> w13;              // 2 hidden x dim
  SecureLinear<P> w2;               // dim x hidden
};

template <typename P>
struct SecureWeights {
  model::ModelConfig config;
  int frac_bits = 0;
  bool is_private = false;
  std::shared_ptr<const RingModel> clear;  // public mode: owns what the spans point into
  SecureLinear<P> embedding;               // vocab x dim
  std::vector<SecureLayer<P>> layers;
  mpc::Shares<P> rms_final;  // (dim)
  SecureLinear<P> wcls;      // vocab x dim; unused when the classifier is shared

  const SecureLinear<P>& classifier() const { return config.shared_classifier ? embedding : wcls; }
};

// Public weights: no communication.
template <typename P>
Result<SecureWeights<P>> PublicWeights(const mpc::Context<P>& ctx,
                                       std::shared_ptr<const RingModel> model);

// Private weights from this party's additive share (consumed). Every party must call it
// with its own share of the same model; 3 input rounds and 1 masking round.
template <typename P>
Result<SecureWeights<P>> PrivateWeights(mpc::Context<P>& ctx, RingModel my_share);

}  // namespace mpcache::infer
