#include "model/float_engine.h"

#include <cmath>
#include <cstring>
#include <string>

#include "model/float_ops.h"

namespace mpcache::model {

FloatEngine::FloatEngine(const ModelWeights& weights, FloatEngineOptions options)
    : weights_(&weights), options_(options) {}

Result<FloatEngine> FloatEngine::Create(const ModelWeights& weights, FloatEngineOptions options) {
  MPCACHE_RETURN_IF_ERROR(weights.CheckShapes());
  const ModelConfig& c = weights.config;
  if (options.max_seq_len < 0) {
    return InvalidArgument("max_seq_len must be >= 0 (0 = the model's seq_len)");
  }
  if (options.threads < 1 || options.threads > 256) {
    return InvalidArgument("threads must be in 1..256, got " + std::to_string(options.threads));
  }
  FloatEngine e(weights, options);
  if (options.threads > 1) e.pool_ = std::make_unique<ParallelFor>(options.threads);
  e.max_seq_len_ = options.max_seq_len == 0 ? c.seq_len : options.max_seq_len;
  const std::size_t d = c.dim, h = c.hidden_dim, kv = c.kv_dim(), L = c.n_layers,
                    S = e.max_seq_len_, hs = c.head_size();
  e.x_.resize(d);
  e.xb_.resize(d);
  e.xb2_.resize(d);
  e.xb_final_.resize(d);
  e.hb_.resize(h);
  e.hb2_.resize(h);
  e.q_.resize(d);
  e.att_.resize(static_cast<std::size_t>(c.n_heads) * S);
  e.logits_.resize(c.vocab_size);
  e.rope_cos_.resize(hs / 2);
  e.rope_sin_.resize(hs / 2);
  e.k_.resize(kv);
  e.v_.resize(kv);
  MPCACHE_ASSIGN_OR_RETURN(KvLayout layout,
                           KvLayout::Create(c.n_layers, e.max_seq_len_, options.kv_block_tokens));
  e.kv_.emplace(std::move(layout), kv);
  if (options.record_layer_outputs) e.layer_outputs_.resize(L * d);
  return e;
}

void FloatEngine::Mat(float* out, const float* x, const float* w, std::size_t n, std::size_t d) {
  constexpr std::size_t kMinParallelWork = std::size_t{1} << 16;  // multiply-adds
  if (!pool_ || n * d < kMinParallelWork) {
    MatMul(out, x, w, n, d);
    return;
  }
  pool_->Run(d, [&](std::size_t begin, std::size_t end) {
    MatMul(out + begin, x, w + begin * n, n, end - begin);
  });
}

std::span<const float> FloatEngine::LayerOutput(int layer) const {
  const std::size_t d = config().dim;
  if (layer < 0 || layer >= config().n_layers || layer_outputs_.empty()) return {};
  return {layer_outputs_.data() + static_cast<std::size_t>(layer) * d, d};
}

Result<std::span<const float>> FloatEngine::Forward(int token, int pos) {
  const ModelConfig& c = config();
  if (token < 0 || token >= c.vocab_size) {
    return InvalidArgument("token id " + std::to_string(token) + " is outside the vocabulary 0.." +
                           std::to_string(c.vocab_size - 1));
  }
  if (pos < 0 || pos >= max_seq_len_) {
    return InvalidArgument("position " + std::to_string(pos) +
                           " is outside the context window 0.." + std::to_string(max_seq_len_ - 1) +
                           " (seq_len " + std::to_string(max_seq_len_) + ")");
  }
  if (pos != kv_->layout().position()) {
    return InvalidArgument("position " + std::to_string(pos) +
                           " out of order: the KV memory holds " +
                           std::to_string(kv_->layout().position()) +
                           " positions (feed positions 0, 1, ... in order)");
  }
  const ModelWeights& w = *weights_;
  const std::size_t d = c.dim, hd = c.hidden_dim, kv = c.kv_dim(), hs = c.head_size(),
                    S = max_seq_len_, kv_mul = c.kv_group();
  float* x = x_.data();
  std::memcpy(x, w.token_embedding.data() + static_cast<std::size_t>(token) * d, d * sizeof(float));
  RopeTables(pos, c.head_size(), c.rope_theta, rope_cos_.data(), rope_sin_.data());
  const float sqrt_hs = std::sqrt(static_cast<float>(hs));

  for (std::size_t l = 0; l < static_cast<std::size_t>(c.n_layers); ++l) {
    const LayerWeights& lw = w.layers[l];
    RmsNorm(xb_.data(), x, lw.rms_att.data(), d, c.norm_eps);
    float* k = k_.data();
    float* v = v_.data();
    Mat(q_.data(), xb_.data(), lw.wq.data(), d, d);
    Mat(k, xb_.data(), lw.wk.data(), d, kv);
    Mat(v, xb_.data(), lw.wv.data(), d, kv);
    ApplyRope(q_.data(), d, c.head_size(), rope_cos_.data(), rope_sin_.data());
    ApplyRope(k, kv, c.head_size(), rope_cos_.data(), rope_sin_.data());
    const int layer = static_cast<int>(l);
    MPCACHE_RETURN_IF_ERROR(kv_->Append(layer, k_, v_));
    const KvPlan plan = kv_->layout().Plan(layer);
    const std::size_t len = static_cast<std::size_t>(plan.length());

    for (std::size_t head = 0; head < static_cast<std::size_t>(c.n_heads); ++head) {
      const float* q = q_.data() + head * hs;
      float* att = att_.data() + head * S;
      const std::size_t kv_off = (head / kv_mul) * hs;
      std::size_t t = 0;
      for (const KvBlockUse& b : plan.blocks) {
        for (int r = 0; r < b.rows; ++r, ++t) {
          const float* kt = kv_->Key(layer, b.block, r) + kv_off;
          float score = 0.0f;
          for (std::size_t i = 0; i < hs; ++i) score += q[i] * kt[i];
          att[t] = score / sqrt_hs;
        }
      }
      Softmax(att, len);
      float* xb = xb_.data() + head * hs;
      std::memset(xb, 0, hs * sizeof(float));
      t = 0;
      for (const KvBlockUse& b : plan.blocks) {
        for (int r = 0; r < b.rows; ++r, ++t) {
          const float* vt = kv_->Value(layer, b.block, r) + kv_off;
          const float a = att[t];
          for (std::size_t i = 0; i < hs; ++i) xb[i] += a * vt[i];
        }
      }
    }
    Mat(xb2_.data(), xb_.data(), lw.wo.data(), d, d);
    for (std::size_t i = 0; i < d; ++i) x[i] += xb2_[i];

    RmsNorm(xb_.data(), x, lw.rms_ffn.data(), d, c.norm_eps);
    Mat(hb_.data(), xb_.data(), lw.w1.data(), d, hd);
    Mat(hb2_.data(), xb_.data(), lw.w3.data(), d, hd);
    SwiGlu(hb_.data(), hb2_.data(), hd);
    Mat(xb_.data(), hb_.data(), lw.w2.data(), hd, d);
    for (std::size_t i = 0; i < d; ++i) x[i] += xb_[i];
    if (!layer_outputs_.empty()) std::memcpy(layer_outputs_.data() + l * d, x, d * sizeof(float));
  }
  RmsNorm(xb_final_.data(), x, w.rms_final.data(), d, c.norm_eps);
  Mat(logits_.data(), xb_final_.data(), w.classifier(), d, c.vocab_size);
  return std::span<const float>(logits_);
}

}  // namespace mpcache::model
