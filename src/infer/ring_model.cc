#include "infer/ring_model.h"

#include "common/fixed_point.h"
#include "model/checkpoint.h"

namespace mpcache::infer {
namespace {

void AppendEncoded(const FixedPoint& fp, const std::vector<float>& v, RingVec& out) {
  out.reserve(out.size() + v.size());
  for (float x : v) out.push_back(fp.Encode(x));
}

RingVec Encode(const FixedPoint& fp, const std::vector<float>& v) {
  RingVec out;
  AppendEncoded(fp, v, out);
  return out;
}

}  // namespace

void RingModel::ForEachTensor(const std::function<void(const std::string&, RingVec&)>& f) {
  f("embedding", embedding);
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const std::string p = "layer" + std::to_string(l) + ".";
    f(p + "rms_att", layers[l].rms_att);
    f(p + "wqkv", layers[l].wqkv);
    f(p + "wo", layers[l].wo);
    f(p + "rms_ffn", layers[l].rms_ffn);
    f(p + "w13", layers[l].w13);
    f(p + "w2", layers[l].w2);
  }
  f("rms_final", rms_final);
  if (!config.shared_classifier) f("wcls", wcls);
}

void RingModel::ForEachTensor(
    const std::function<void(const std::string&, const RingVec&)>& f) const {
  const_cast<RingModel*>(this)->ForEachTensor(
      [&](const std::string& name, RingVec& v) { f(name, v); });
}

Result<std::size_t> RingModel::ExpectedSize(const std::string& name) const {
  const std::size_t d = config.dim, hd = config.hidden_dim, kv = config.kv_dim(),
                    V = config.vocab_size;
  if (name == "embedding" || name == "wcls") return compact ? 0 : V * d;
  if (name == "rms_final") return d;
  const auto dot = name.find('.');
  if (name.rfind("layer", 0) == 0 && dot != std::string::npos) {
    const std::string t = name.substr(dot + 1);
    if (t == "rms_att" || t == "rms_ffn") return d;
    if (compact && (t == "wqkv" || t == "wo" || t == "w13" || t == "w2")) return 0;
    if (t == "wqkv") return (d + 2 * kv) * d;
    if (t == "wo") return d * d;
    if (t == "w13") return 2 * hd * d;
    if (t == "w2") return d * hd;
  }
  return InvalidArgument("unknown tensor '" + name + "'");
}

Status RingModel::CheckShapes() const {
  MPCACHE_RETURN_IF_ERROR(config.Validate());
  if (static_cast<int>(layers.size()) != config.n_layers) {
    return CorruptData("model has " + std::to_string(layers.size()) + " layers, config says " +
                       std::to_string(config.n_layers));
  }
  Status status = Status::Ok();
  ForEachTensor([&](const std::string& name, const RingVec& v) {
    if (!status.ok()) return;
    auto want = ExpectedSize(name);
    if (!want.ok()) {
      status = want.error();
    } else if (v.size() != *want) {
      status = CorruptData("tensor " + name + " has " + std::to_string(v.size()) +
                           " elements, expected " + std::to_string(*want));
    }
  });
  return status;
}

namespace {
Status CheckFracBits(int frac_bits) {
  if (frac_bits < 1 || frac_bits > 30) {
    return InvalidArgument("frac_bits must be in 1..30, got " + std::to_string(frac_bits));
  }
  return Status::Ok();
}
}  // namespace

Result<std::shared_ptr<const RingModel>> EncodeModel(const model::ModelWeights& weights,
                                                     int frac_bits) {
  MPCACHE_RETURN_IF_ERROR(weights.CheckShapes());
  MPCACHE_RETURN_IF_ERROR(CheckFracBits(frac_bits));
  const FixedPoint fp{frac_bits};
  auto m = std::make_shared<RingModel>();
  m->config = weights.config;
  m->frac_bits = frac_bits;
  m->embedding = Encode(fp, weights.token_embedding);
  for (const model::LayerWeights& lw : weights.layers) {
    RingLayer rl;
    rl.rms_att = Encode(fp, lw.rms_att);
    AppendEncoded(fp, lw.wq, rl.wqkv);
    AppendEncoded(fp, lw.wk, rl.wqkv);
    AppendEncoded(fp, lw.wv, rl.wqkv);
    rl.wo = Encode(fp, lw.wo);
    rl.rms_ffn = Encode(fp, lw.rms_ffn);
    AppendEncoded(fp, lw.w1, rl.w13);
    AppendEncoded(fp, lw.w3, rl.w13);
    rl.w2 = Encode(fp, lw.w2);
    m->layers.push_back(std::move(rl));
  }
  m->rms_final = Encode(fp, weights.rms_final);
  if (!weights.config.shared_classifier) m->wcls = Encode(fp, weights.wcls);
  MPCACHE_RETURN_IF_ERROR(m->CheckShapes());
  return std::shared_ptr<const RingModel>(std::move(m));
}

Result<std::shared_ptr<const RingModel>> EncodeCompactModel(
    std::shared_ptr<const model::CompactModel> compact, int frac_bits) {
  if (!compact) return InvalidArgument("no compact model");
  if (!compact->checked) {
    return InvalidArgument(compact->path() + " was opened without its values checked");
  }
  MPCACHE_RETURN_IF_ERROR(CheckFracBits(frac_bits));
  const FixedPoint fp{frac_bits};
  auto m = std::make_shared<RingModel>();
  m->config = compact->config;
  m->frac_bits = frac_bits;
  for (const model::CompactLayer& cl : compact->layers) {
    RingLayer rl;
    rl.rms_att = Encode(fp, cl.rms_att);
    rl.rms_ffn = Encode(fp, cl.rms_ffn);
    m->layers.push_back(std::move(rl));
  }
  m->rms_final = Encode(fp, compact->rms_final);
  m->compact = std::move(compact);
  MPCACHE_RETURN_IF_ERROR(m->CheckShapes());
  return std::shared_ptr<const RingModel>(std::move(m));
}

Result<std::shared_ptr<const RingModel>> LoadRingModel(
    const std::string& path, int frac_bits,
    const std::function<void(std::uint64_t, std::uint64_t)>& progress) {
  MPCACHE_ASSIGN_OR_RETURN(bool compact, model::CompactModel::IsCompactCheckpoint(path));
  if (compact) {
    model::CompactOpenOptions o;
    o.progress = progress;
    MPCACHE_ASSIGN_OR_RETURN(std::shared_ptr<const model::CompactModel> m,
                             model::CompactModel::Open(path, o));
    return EncodeCompactModel(std::move(m), frac_bits);
  }
  MPCACHE_ASSIGN_OR_RETURN(model::ModelWeights w, model::LoadCheckpoint(path));
  return EncodeModel(w, frac_bits);
}

}  // namespace mpcache::infer
