// The weights as one party holds them for the secure forward.
//
// weights: public — every party reads the same clear RingModel (shared read-only between
//   in-process parties); linear layers are local products (values and MAC shares alike)
//   and the RMSNorm gains are public constants turned into trivial sharings. With a compact
//   model (RingModel::compact) the products read the mapped Q8_0/F16 integers (value x
//   2^24) directly, values and MAC shares in one vectorised pass over the weights, split
//   over ContextOptions::threads (model/compact_kernels.h); their outputs carry f + 24
//   fractional bits and are truncated by 24 (LinearShift), the embedding row by 24 - f.
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
  // Public compact weights: these matrices stacked by rows (e.g. wq, wk, wv), in the map.
  std::vector<model::CompactMatrix> compact;
  mpc::FixedOperand<P> fixed;  // private weights, masked once
  bool is_compact() const { return !compact.empty(); }
  bool is_private() const { return pub.empty() && compact.empty(); }
};

// The bits a product W x with these weights carries beyond the activation's f: f for the
// wide encodings, 24 (model::kCompactScaleBits) for compact weights.
template <typename P>
int LinearShift(const SecureLinear<P>& w, int frac_bits) {
  return w.is_compact() ? model::kCompactScaleBits : frac_bits;
}

// W x with public weights (wide or compact), local: rows values, not yet truncated.
template <typename P>
mpc::Shares<P> PublicProduct(const mpc::Context<P>& ctx, const SecureLinear<P>& w,
                             const mpc::Shares<P>& x);
// one_hot . E with public weights, local: cols values, at f bits (wide) or 24 bits
// (compact; the caller brings them to f).
template <typename P>
mpc::Shares<P> PublicLookup(const mpc::Context<P>& ctx, const SecureLinear<P>& e,
                            const mpc::Shares<P>& one_hot);

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
