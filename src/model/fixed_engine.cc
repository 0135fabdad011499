#include "model/fixed_engine.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "model/compact_kernels.h"
#include "model/float_engine.h"
#include "model/float_ops.h"

namespace mpcache::model {
namespace {

std::vector<Ring64> EncodeAll(const FixedPoint& fp, const std::vector<float>& v) {
  std::vector<Ring64> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = fp.Encode(v[i]);
  return out;
}

double MaxAbsDiff(std::span<const float> a, std::span<const double> b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(a[i]) - b[i]));
  }
  return worst;
}

}  // namespace

void Range::Add(double v) {
  if (count == 0) {
    min = max = v;
  } else {
    min = std::min(min, v);
    max = std::max(max, v);
  }
  ++count;
}

FixedEngine::FixedEngine(const ModelConfig& config, FixedEngineOptions options)
    : config_(config),
      options_(options),
      fp_{options.math.frac_bits},
      math_(options.noisy_trunc_seed ? FixedMath(options.math, *options.noisy_trunc_seed)
                                     : FixedMath(options.math)) {}

Result<FixedEngine> FixedEngine::Create(const ModelWeights& weights, FixedEngineOptions options) {
  MPCACHE_RETURN_IF_ERROR(weights.CheckShapes());
  MPCACHE_RETURN_IF_ERROR(options.math.Validate());
  const ModelConfig& c = weights.config;
  if (options.max_seq_len < 0) return InvalidArgument("max_seq_len must be >= 0");
  if (options.mpcache) MPCACHE_RETURN_IF_ERROR(options.mpcache->Validate());
  FixedEngine e(c, options);
  e.max_seq_len_ = options.max_seq_len == 0 ? c.seq_len : options.max_seq_len;
  const FixedPoint& fp = e.fp_;
  e.embedding_ = EncodeAll(fp, weights.token_embedding);
  e.rms_final_ = EncodeAll(fp, weights.rms_final);
  if (!c.shared_classifier) e.wcls_ = EncodeAll(fp, weights.wcls);
  for (const LayerWeights& lw : weights.layers) {
    e.layers_.push_back({EncodeAll(fp, lw.rms_att), EncodeAll(fp, lw.wq), EncodeAll(fp, lw.wk),
                         EncodeAll(fp, lw.wv), EncodeAll(fp, lw.wo), EncodeAll(fp, lw.rms_ffn),
                         EncodeAll(fp, lw.w1), EncodeAll(fp, lw.w2), EncodeAll(fp, lw.w3)});
  }
  MPCACHE_RETURN_IF_ERROR(e.Allocate());
  return e;
}

Result<FixedEngine> FixedEngine::Create(std::shared_ptr<const CompactModel> model,
                                        FixedEngineOptions options) {
  if (!model) return InvalidArgument("no model");
  if (!model->checked) {
    return InvalidArgument(model->path() + " was opened without its values checked");
  }
  MPCACHE_RETURN_IF_ERROR(options.math.Validate());
  if (options.max_seq_len < 0) return InvalidArgument("max_seq_len must be >= 0");
  if (options.threads < 1 || options.threads > 256) {
    return InvalidArgument("threads must be in 1..256, got " + std::to_string(options.threads));
  }
  if (options.mpcache) MPCACHE_RETURN_IF_ERROR(options.mpcache->Validate());
  const ModelConfig& c = model->config;
  FixedEngine e(c, options);
  e.max_seq_len_ = options.max_seq_len == 0 ? c.seq_len : options.max_seq_len;
  const FixedPoint& fp = e.fp_;
  e.rms_final_ = EncodeAll(fp, model->rms_final);
  for (const CompactLayer& lw : model->layers) {
    EncodedLayer el;
    el.rms_att = EncodeAll(fp, lw.rms_att);
    el.rms_ffn = EncodeAll(fp, lw.rms_ffn);
    e.layers_.push_back(std::move(el));
  }
  e.compact_ = std::move(model);
  MPCACHE_RETURN_IF_ERROR(e.Allocate());
  return e;
}

Status FixedEngine::Allocate() {
  const ModelConfig& c = config_;
  MPCACHE_ASSIGN_OR_RETURN(KvLayout layout,
                           KvLayout::Create(c.n_layers, max_seq_len_, options_.kv_block_tokens));
  kv_.emplace(std::move(layout), static_cast<std::size_t>(c.kv_dim()));
  reps_.resize(static_cast<std::size_t>(c.n_layers));
  attended_.resize(static_cast<std::size_t>(c.n_layers));
  picked_.resize(static_cast<std::size_t>(c.n_layers));
  means_.resize(static_cast<std::size_t>(c.n_layers));
  impact_.resize(static_cast<std::size_t>(c.n_layers));
  return Status::Ok();
}

// out[i] = sum_j w[i, j] x[j], at 2f bits (compact weights: the f + 24-bit sums brought to
// 2f, as the secure engine does before RoPE).
FixedEngine::Vec FixedEngine::MatVecRaw(const Vec& w, const Vec& x, std::size_t rows,
                                        std::size_t cols, const CompactMatrix* compact) {
  Vec sums(rows);
  if (compact != nullptr) {
    const int f = fp_.frac_bits;
    CompactMatVec(*compact, x.data(), sums.data(), KernelOptions{options_.threads});
    if (kCompactScaleBits > f) return math_.backend().Trunc(sums, kCompactScaleBits - f);
    for (Ring64& s : sums) s <<= (f - kCompactScaleBits);
    return sums;
  }
  for (std::size_t i = 0; i < rows; ++i) {
    const Ring64* wr = w.data() + i * cols;
    Ring64 acc = 0;
    for (std::size_t j = 0; j < cols; ++j) acc += wr[j] * x[j];
    sums[i] = acc;
  }
  return sums;
}

// out[i] = Trunc_f(sum_j w[i, j] x[j]) (Trunc_24 of the sums of compact weights): one
// truncation per output, as the secure matmul.
FixedEngine::Vec FixedEngine::MatVec(const Vec& w, const Vec& x, std::size_t rows, std::size_t cols,
                                     const CompactMatrix* compact) {
  if (compact != nullptr) {
    Vec sums(rows);
    CompactMatVec(*compact, x.data(), sums.data(), KernelOptions{options_.threads});
    return math_.backend().Trunc(sums, kCompactScaleBits);
  }
  return math_.backend().Trunc(MatVecRaw(w, x, rows, cols), fp_.frac_bits);
}

FixedEngine::Vec FixedEngine::Norm(const Vec& x, const Vec& g) {
  if (options_.collect_ranges) RecordMeanSquare(x);
  return math_.RmsNorm(x, g, 1, x.size(), config_.norm_eps);
}

void FixedEngine::RecordMeanSquare(const Vec& x) {
  double ss = 0;
  for (Ring64 v : x) ss += fp_.Decode(v) * fp_.Decode(v);
  ranges_.rms_mean_square.Add(ss / static_cast<double>(x.size()));
}

void FixedEngine::Record(const std::string& name, const Vec& v) {
  if (!options_.record) return;
  auto& out = trace_[name];
  out.resize(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = fp_.Decode(v[i]);
}

Result<std::span<const double>> FixedEngine::Forward(int token, int pos) {
  const ModelConfig& c = config_;
  if (token < 0 || token >= c.vocab_size) {
    return InvalidArgument("token id " + std::to_string(token) + " is outside the vocabulary 0.." +
                           std::to_string(c.vocab_size - 1));
  }
  if (pos < 0 || pos >= max_seq_len_) {
    return InvalidArgument("position " + std::to_string(pos) +
                           " is outside the context window 0.." + std::to_string(max_seq_len_ - 1));
  }
  if (pos != kv_->layout().position()) {
    return InvalidArgument("position " + std::to_string(pos) +
                           " out of order: the KV memory holds " +
                           std::to_string(kv_->layout().position()) +
                           " positions (feed positions 0, 1, ... in order)");
  }
  PlainBackend& be = math_.backend();
  const int f = fp_.frac_bits;
  const std::size_t d = c.dim, hd = c.hidden_dim, kv = c.kv_dim(), hs = c.head_size(),
                    nh = c.n_heads, kv_mul = c.kv_group();
  const auto ct = [this](std::size_t l, CompactMatrix CompactLayer::*m) -> const CompactMatrix* {
    return compact_ ? &(compact_->layers[l].*m) : nullptr;
  };
  Vec x;
  if (compact_) {
    // The exact integers of the row (value x 2^24), brought to f bits as the secure lookup
    // does: one truncation by 24 - f (or a shift up when f > 24).
    const CompactMatrix& emb = compact_->embedding;
    x.resize(d);
    for (std::size_t j = 0; j < d; ++j) {
      x[j] = static_cast<Ring64>(emb.At(static_cast<std::size_t>(token), j));
    }
    if (f < kCompactScaleBits) {
      x = be.Trunc(x, kCompactScaleBits - f);
    } else if (f > kCompactScaleBits) {
      for (Ring64& v : x) v <<= f - kCompactScaleBits;
    }
  } else {
    x.assign(embedding_.begin() + token * d, embedding_.begin() + (token + 1) * d);
  }

  std::vector<float> cos_f(hs / 2), sin_f(hs / 2);
  RopeTables(pos, c.head_size(), c.rope_theta, cos_f.data(), sin_f.data());
  Vec cos_r = EncodeAll(fp_, cos_f), sin_r = EncodeAll(fp_, sin_f);
  // RoPE on the projection's sums (at 2f bits), then ONE truncation by 2f: the secure
  // engine's truncations ride on the next exchange, and one costs less than two.
  const auto rope = [&](const Vec& v) {
    Vec raw(v.size());
    for (std::size_t i = 0; i < v.size(); i += 2) {
      const std::size_t k = (i % hs) / 2;
      raw[i] = v[i] * cos_r[k] - v[i + 1] * sin_r[k];
      raw[i + 1] = v[i] * sin_r[k] + v[i + 1] * cos_r[k];
    }
    return be.Trunc(raw, 2 * f);
  };
  const Ring64 inv_sqrt_hs =
      FixedPoint{kScoreScaleBits}.Encode(1.0 / std::sqrt(static_cast<double>(hs)));

  for (std::size_t l = 0; l < static_cast<std::size_t>(c.n_layers); ++l) {
    const EncodedLayer& lw = layers_[l];
    const std::string prefix = "layer" + std::to_string(l) + ".";
    Vec xb = Norm(x, lw.rms_att);
    Vec q = rope(MatVecRaw(lw.wq, xb, d, d, ct(l, &CompactLayer::wq)));
    Vec k = rope(MatVecRaw(lw.wk, xb, kv, d, ct(l, &CompactLayer::wk)));
    Vec v = MatVec(lw.wv, xb, kv, d, ct(l, &CompactLayer::wv));
    const int layer = static_cast<int>(l);
    MPCACHE_RETURN_IF_ERROR(kv_->Append(layer, k, v));
    // The attended positions: all of them (full cache) or the policy's selection.
    const int sel_layer = options_.mpcache ? options_.mpcache->SelectingLayer(layer) : layer;
    if (sel_layer == layer) {
      attended_[l] = Select(layer, q);
    } else {
      attended_[l] = attended_[static_cast<std::size_t>(sel_layer)];
      picked_[l] = picked_[static_cast<std::size_t>(sel_layer)];
    }
    const std::vector<int>& rows = attended_[l];
    const std::size_t att_cols = rows.size();
    // The residual path's virtual tokens (MPCache, policy residual) follow the attended rows.
    const SelectionShape shape = options_.mpcache
                                     ? ShapeFor(*options_.mpcache, kv_->layout().length(layer))
                                     : SelectionShape{};
    const auto virt = static_cast<std::size_t>(shape.residual_columns());
    const std::size_t cols = att_cols + virt;
    const int bt = kv_->layout().block_tokens();

    // Scores for all heads at once: rows = heads, cols = the attended positions in order.
    Vec raw(nh * cols);
    for (std::size_t h = 0; h < nh; ++h) {
      const std::size_t kv_off = (h / kv_mul) * hs;
      for (std::size_t t = 0; t < att_cols; ++t) {
        const Ring64* kt = kv_->Key(layer, rows[t] / bt, rows[t] % bt) + kv_off;
        Ring64 acc = 0;
        for (std::size_t i = 0; i < hs; ++i) acc += q[h * hs + i] * kt[i];
        raw[h * cols + t] = acc;
      }
    }
    // Impact re-weighting: the kept prompt rows' biases (the eviction's; none before it).
    if (const Vec& bias = impact_[l]; !bias.empty()) {
      for (std::size_t h = 0; h < nh; ++h) {
        for (std::size_t t = 0; t < att_cols; ++t) {
          const auto r = static_cast<std::size_t>(rows[t]);
          if (r < bias.size()) raw[h * cols + t] += bias[r];
        }
      }
    }
    if (virt > 0) {
      const Vec r = ResidualScores(layer, q, shape);
      for (std::size_t h = 0; h < nh; ++h) {
        std::copy(r.begin() + static_cast<std::ptrdiff_t>(h * virt),
                  r.begin() + static_cast<std::ptrdiff_t>((h + 1) * virt),
                  raw.begin() + static_cast<std::ptrdiff_t>(h * cols + att_cols));
      }
    }
    Vec scores = be.Trunc(be.MulConst(raw, inv_sqrt_hs), f + kScoreScaleBits);
    if (options_.collect_ranges) {
      for (std::size_t h = 0; h < nh; ++h) {
        double mx = -std::numeric_limits<double>::infinity(), sum = 0;
        for (std::size_t t = 0; t < cols; ++t) {
          const double s = fp_.Decode(scores[h * cols + t]);
          ranges_.attn_scores.Add(s);
          mx = std::max(mx, s);
        }
        for (std::size_t t = 0; t < cols; ++t) {
          const double sh = fp_.Decode(scores[h * cols + t]) - mx;
          ranges_.attn_shifted.Add(sh);
          sum += std::exp(sh);
        }
        ranges_.softmax_denominator.Add(sum);
      }
    }
    Vec probs = math_.Softmax(scores, nh, cols, kScoreCompareBits);
    if (eviction_ && !kv_->layout().prefill_done() && pos >= eviction_->observe_from()) {
      // The window's queries score every row they attend: their weights (or the sigmoid of
      // their scaled scores), summed over heads.
      const Vec observed = options_.mpcache->eviction_score == EvictionScore::kSigmoid
                               ? math_.Sigmoid(scores)
                               : Vec{};
      const Vec& score = observed.empty() ? probs : observed;
      Vec& imp = importance_[l];
      if (imp.size() < static_cast<std::size_t>(kv_->layout().length(layer))) {
        imp.resize(static_cast<std::size_t>(kv_->layout().length(layer)), 0);
      }
      for (std::size_t h = 0; h < nh; ++h) {
        for (std::size_t t = 0; t < att_cols; ++t) {
          imp[static_cast<std::size_t>(rows[t])] += score[h * cols + t];
        }
      }
    }
    Vec att_raw(d, 0);
    for (std::size_t h = 0; h < nh; ++h) {
      const std::size_t kv_off = (h / kv_mul) * hs;
      for (std::size_t t = 0; t < att_cols; ++t) {
        const Ring64 a = probs[h * cols + t];
        const Ring64* vt = kv_->Value(layer, rows[t] / bt, rows[t] % bt) + kv_off;
        for (std::size_t i = 0; i < hs; ++i) att_raw[h * hs + i] += a * vt[i];
      }
      for (std::size_t c = 0; c < virt; ++c) {  // the virtual tokens' mean values
        const Ring64 a = probs[h * cols + att_cols + c];
        const Ring64* vt = means_[l][c + 1].data() + kv + kv_off;
        for (std::size_t i = 0; i < hs; ++i) att_raw[h * hs + i] += a * vt[i];
      }
    }
    Vec att = be.Trunc(att_raw, f);
    Vec attn_out = MatVec(lw.wo, att, d, d, ct(l, &CompactLayer::wo));
    Record(prefix + "attn_out", attn_out);
    x = be.Add(x, attn_out);

    xb = Norm(x, lw.rms_ffn);
    Vec h1 = MatVec(lw.w1, xb, hd, d, ct(l, &CompactLayer::w1));
    Vec h3 = MatVec(lw.w3, xb, hd, d, ct(l, &CompactLayer::w3));
    if (options_.collect_ranges) {
      for (Ring64 g : h1) ranges_.ffn_gate.Add(fp_.Decode(g));
    }
    Vec gated = math_.SiluTimes(h1, h3);
    Vec ffn_out = MatVec(lw.w2, gated, d, hd, ct(l, &CompactLayer::w2));
    Record(prefix + "ffn_out", ffn_out);
    x = be.Add(x, ffn_out);
    Record(prefix + "out", x);
    if (options_.collect_ranges) {
      for (Ring64 r : x) ranges_.residual.Add(fp_.Decode(r));
    }
  }
  Vec xf = Norm(x, rms_final_);
  Record("final_norm", xf);
  logits_ring_ = MatVec(c.shared_classifier ? embedding_ : wcls_, xf, c.vocab_size, d,
                        compact_ ? &compact_->classifier() : nullptr);
  Record("logits", logits_ring_);
  logits_.resize(logits_ring_.size());
  for (std::size_t i = 0; i < logits_.size(); ++i) {
    logits_[i] = fp_.Decode(logits_ring_[i]);
    if (options_.collect_ranges) ranges_.logits.Add(logits_[i]);
  }
  return std::span<const double>(logits_);
}

Status FixedEngine::BeginPrompt(int prompt_len) {
  MPCACHE_RETURN_IF_ERROR(
      CheckPromptAnnouncement(prompt_len, kv_->layout().position(), max_seq_len_));
  eviction_.reset();
  if (options_.mpcache && options_.mpcache->evicts()) {
    eviction_ = EvictionFor(*options_.mpcache, prompt_len);
    importance_.assign(static_cast<std::size_t>(config_.n_layers), {});
  }
  return Status::Ok();
}

Status FixedEngine::EndPrefill(int window) {
  if (eviction_ && eviction_->evicts()) {
    const EvictionShape& e = *eviction_;
    kept_.clear();
    if (kv_->layout().position() != e.prompt) {
      return InvalidArgument("end of a prefill of " + std::to_string(e.prompt) +
                             " tokens at position " + std::to_string(kv_->layout().position()));
    }
    for (int l = 0; l < config_.n_layers; ++l) {
      Vec& imp = importance_[static_cast<std::size_t>(l)];
      imp.resize(static_cast<std::size_t>(e.prompt), 0);
      const std::span<const Ring64> cand(imp.data() + e.sink,
                                         static_cast<std::size_t>(e.candidates));
      const std::vector<int> picked = TopKIndices(cand, static_cast<std::size_t>(e.keep));
      kept_.push_back(KeptRows(e, picked));
      if (options_.mpcache->impact_weight > 0) {
        // Impact re-weighting: each kept row's raw-score bias, in the kept order.
        const Ring64 mult = ImpactMultiplier(*options_.mpcache, e, config_.n_heads,
                                             static_cast<int>(config_.head_size()), fp_.frac_bits);
        Vec& bias = impact_[static_cast<std::size_t>(l)];
        bias.clear();
        for (int r : kept_.back()) bias.push_back(imp[static_cast<std::size_t>(r)] * mult);
      }
      MPCACHE_RETURN_IF_ERROR(kv_->Compact(l, kept_.back()));
      reps_[static_cast<std::size_t>(l)].clear();  // the clusters are new
      means_[static_cast<std::size_t>(l)].clear();
    }
    importance_.clear();
  }
  return kv_->layout().EndPrefill(window);
}

std::vector<int> FixedEngine::Select(int layer, const Vec& q) {
  const int length = kv_->layout().length(layer);
  if (!options_.mpcache) return AttendedPositions(SelectionShape{length, 1, length, 0, 0}, {});
  const MpcachePolicy& policy = *options_.mpcache;
  const SelectionShape shape = ShapeFor(policy, length);
  if (!shape.selects()) return AttendedPositions(shape, {});
  // Representatives of the clusters completed since the last step (kept for later steps).
  const std::size_t kv = config_.kv_dim(), cs = static_cast<std::size_t>(shape.cluster_tokens);
  const int bt = kv_->layout().block_tokens();
  auto& reps = reps_[static_cast<std::size_t>(layer)];
  const auto subs = static_cast<std::size_t>(shape.subs);
  const std::size_t cs2 = cs / subs;
  Vec keys(cs * kv);
  while (static_cast<int>(reps.size()) < length / shape.cluster_tokens) {
    const int first = static_cast<int>(reps.size()) * shape.cluster_tokens;
    for (std::size_t t = 0; t < cs; ++t) {
      const int pos = first + static_cast<int>(t);
      const Ring64* k = kv_->Key(layer, pos / bt, pos % bt);
      std::copy(k, k + kv, keys.begin() + static_cast<std::ptrdiff_t>(t * kv));
    }
    // [level-1 representative | the s sub-clusters' (level 2 only)].
    Vec rep = ClusterRepresentative(policy, keys.data(), cs, kv);
    for (std::size_t u = 0; subs > 1 && u < subs; ++u) {
      const Vec sub = ClusterRepresentative(policy, keys.data() + u * cs2 * kv, cs2, kv);
      rep.insert(rep.end(), sub.begin(), sub.end());
    }
    reps.push_back(std::move(rep));
  }
  // score = sum_h q_h . r[kv(h)] for the candidates (clusters 1 .. C - 2) and their
  // sub-clusters.
  const std::size_t hs = config_.head_size(), nh = config_.n_heads, kv_mul = config_.kv_group();
  const auto score = [&](const Ring64* r) {
    Ring64 acc = 0;
    for (std::size_t h = 0; h < nh; ++h) {
      const std::size_t kv_off = (h / kv_mul) * hs;
      for (std::size_t i = 0; i < hs; ++i) acc += q[h * hs + i] * r[kv_off + i];
    }
    return acc;
  };
  const auto m = static_cast<std::size_t>(shape.candidates);
  Vec scores(m, 0), sub(shape.selects2() ? m * subs : 0, 0);
  for (std::size_t c = 0; c < m; ++c) {
    const Vec& r = reps[c + 1];
    scores[c] = score(r.data());
    for (std::size_t u = 0; u < subs && !sub.empty(); ++u) {
      sub[c * subs + u] = score(r.data() + (1 + u) * kv);
    }
  }
  if (policy.share_layers && policy.DecayQ() > 0) {
    // Cross-layer score reuse: + the previous selecting layer's own scores of this step,
    // decayed; this layer's own scores are the next one's.
    Vec own = scores;
    if (policy.BlendsScores(layer) && blend_length_ == length && blend_.size() == m) {
      PlainBackend& be = math_.backend();
      const Vec d =
          be.Trunc(be.MulConst(blend_, static_cast<Ring64>(policy.DecayQ())), kDecayShift);
      for (std::size_t c = 0; c < m; ++c) scores[c] += d[c];
    }
    blend_ = std::move(own);
    blend_length_ = length;
  }
  const std::vector<int> picked = TopKIndices(scores, static_cast<std::size_t>(shape.keep));
  picked_[static_cast<std::size_t>(layer)] = picked;
  if (!shape.selects2()) return AttendedPositions(shape, picked);
  const std::vector<int> picked2 =
      TopKIndices(GatheredSubScores(shape, sub, picked), static_cast<std::size_t>(shape.keep2));
  return AttendedPositions(shape, picked, picked2);
}

FixedEngine::Vec FixedEngine::ResidualScores(int layer, const Vec& q, const SelectionShape& shape) {
  const std::size_t kv = config_.kv_dim(), hs = config_.head_size(), nh = config_.n_heads;
  const std::size_t kv_mul = config_.kv_group(),
                    cs = static_cast<std::size_t>(shape.cluster_tokens);
  const int bt = kv_->layout().block_tokens(), f = fp_.frac_bits;
  auto& means = means_[static_cast<std::size_t>(layer)];
  const Ring64 mult = MeanMultiplier(shape.cluster_tokens);
  PlainBackend& be = math_.backend();
  while (static_cast<int>(means.size()) < shape.length / shape.cluster_tokens) {
    const int first = static_cast<int>(means.size()) * shape.cluster_tokens;
    Vec sum(2 * kv, 0);
    for (std::size_t t = 0; t < cs; ++t) {
      const int pos = first + static_cast<int>(t);
      const Ring64* k = kv_->Key(layer, pos / bt, pos % bt);
      const Ring64* v = kv_->Value(layer, pos / bt, pos % bt);
      for (std::size_t i = 0; i < kv; ++i) {
        sum[i] += k[i];
        sum[kv + i] += v[i];
      }
    }
    means.push_back(be.Trunc(be.MulConst(sum, mult), kMeanShift));
  }
  const auto m = static_cast<std::size_t>(shape.candidates);
  std::vector<bool> selected(m, false);
  for (const int c : picked_[static_cast<std::size_t>(layer)]) {
    selected[static_cast<std::size_t>(c)] = true;
  }
  const Ring64 bias = ResidualBiasRaw(shape.cluster_tokens, static_cast<int>(hs), f);
  const Ring64 mask = ResidualMaskRaw(static_cast<int>(hs), f);
  Vec out(nh * m);
  for (std::size_t h = 0; h < nh; ++h) {
    const std::size_t kv_off = (h / kv_mul) * hs;
    for (std::size_t c = 0; c < m; ++c) {
      const Ring64* kbar = means[c + 1].data() + kv_off;
      Ring64 acc = bias - (selected[c] ? mask : 0);
      for (std::size_t i = 0; i < hs; ++i) acc += q[h * hs + i] * kbar[i];
      out[h * m + c] = acc;
    }
  }
  return out;
}

int FixedEngine::Argmax() const {
  int best = 0;
  for (std::size_t i = 1; i < logits_ring_.size(); ++i) {
    if (static_cast<std::int64_t>(logits_ring_[i]) >
        static_cast<std::int64_t>(logits_ring_[best])) {
      best = static_cast<int>(i);
    }
  }
  return best;
}

Result<std::span<const float>> CompareStep(FloatEngine& float_engine, FixedEngine& fixed_engine,
                                           int token, int pos, std::vector<NamedError>& errors) {
  if (!fixed_engine.options().record) {
    return InvalidArgument("CompareStep needs a FixedEngine created with record = true");
  }
  MPCACHE_ASSIGN_OR_RETURN(auto float_logits, float_engine.Forward(token, pos));
  MPCACHE_RETURN_IF_ERROR(fixed_engine.Forward(token, pos));
  const int layers = fixed_engine.config().n_layers;
  if (errors.empty()) {
    for (int l = 0; l < layers; ++l) errors.push_back({"layer" + std::to_string(l) + ".out", 0});
    errors.push_back({"final_norm", 0});
    errors.push_back({"logits", 0});
  }
  const auto& trace = fixed_engine.Trace();
  const auto fold = [&](std::size_t i, std::span<const float> want, const std::string& name) {
    const auto it = trace.find(name);
    if (it == trace.end() || want.empty()) {
      return Status(Internal("CompareStep: no '" + name +
                             "' on one side (float engine needs "
                             "record_layer_outputs)"));
    }
    errors[i].max_abs_error = std::max(errors[i].max_abs_error, MaxAbsDiff(want, it->second));
    return Status::Ok();
  };
  for (int l = 0; l < layers; ++l) {
    MPCACHE_RETURN_IF_ERROR(fold(l, float_engine.LayerOutput(l), errors[l].name));
  }
  MPCACHE_RETURN_IF_ERROR(fold(layers, float_engine.FinalNormed(), "final_norm"));
  MPCACHE_RETURN_IF_ERROR(fold(layers + 1, float_logits, "logits"));
  return float_logits;
}

Top2 TopTwo(std::span<const float> logits) {
  Top2 out;
  if (logits.empty()) return out;
  double second = -std::numeric_limits<double>::infinity();
  for (std::size_t i = 1; i < logits.size(); ++i) {
    if (logits[i] > logits[out.index]) {
      second = logits[out.index];
      out.index = static_cast<int>(i);
    } else if (logits[i] > second) {
      second = logits[i];
    }
  }
  out.margin = logits.size() > 1 ? logits[out.index] - second : 0;
  return out;
}

}  // namespace mpcache::model
