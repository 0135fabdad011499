#include "infer/secure_weights.h"

#include <string>

#include "model/compact_kernels.h"
#include "mpc/fixed_batch.h"
#include "mpc/io.h"

namespace mpcache::infer {

using mpc::Shares;

template <typename P>
Shares<P> PublicProduct(const mpc::Context<P>& ctx, const SecureLinear<P>& w, const Shares<P>& x) {
  if (!w.is_compact()) return mpc::MatMulPublicLeft<P>(ctx, w.pub, w.rows, w.cols, x, 1);
  Shares<P> out(w.rows);
  const model::KernelOptions o{ctx.options().threads};
  std::size_t off = 0;
  for (const model::CompactMatrix& part : w.compact) {
    if constexpr (P::kMalicious) {
      model::CompactMatVec2(part, x.v.data(), x.m.data(), out.v.data() + off, out.m.data() + off,
                            o);
    } else {
      model::CompactMatVec(part, x.v.data(), out.v.data() + off, o);
    }
    off += part.rows;
  }
  return out;
}

template <typename P>
Shares<P> PublicLookup(const mpc::Context<P>& ctx, const SecureLinear<P>& e,
                       const Shares<P>& one_hot) {
  if (!e.is_compact()) return mpc::MatMulPublicRight<P>(ctx, one_hot, 1, e.rows, e.pub, e.cols);
  Shares<P> out(e.cols);
  const model::KernelOptions o{ctx.options().threads};
  const model::CompactMatrix& m = e.compact.front();
  if constexpr (P::kMalicious) {
    model::CompactVecMat2(m, one_hot.v.data(), one_hot.m.data(), out.v.data(), out.m.data(), o);
  } else {
    model::CompactVecMat(m, one_hot.v.data(), out.v.data(), o);
  }
  return out;
}

namespace {

template <typename P>
Result<SecureWeights<P>> CompactPublicWeights(
    const mpc::Context<P>& ctx,
    std::shared_ptr<const RingModel> model) {  // NOLINT(performance-unnecessary-value-param)
  const model::CompactModel& cm = *model->compact;
  const model::ModelConfig& c = model->config;
  const auto gain = [&](const RingVec& g) { return mpc::PublicShares<P>(ctx.key(), g); };
  const auto linear = [](std::vector<model::CompactMatrix> parts) {
    SecureLinear<P> out;
    out.cols = parts.front().cols;
    for (const auto& p : parts) out.rows += p.rows;
    out.compact = std::move(parts);
    return out;
  };
  SecureWeights<P> w;
  w.config = c;
  w.frac_bits = model->frac_bits;
  w.embedding = linear({cm.embedding});
  for (std::size_t l = 0; l < model->layers.size(); ++l) {
    const RingLayer& rl = model->layers[l];
    const model::CompactLayer& cl = cm.layers[l];
    SecureLayer<P> sl;
    sl.rms_att = gain(rl.rms_att);
    sl.rms_ffn = gain(rl.rms_ffn);
    sl.wqkv = linear({cl.wq, cl.wk, cl.wv});
    sl.wo = linear({cl.wo});
    sl.w13 = linear({cl.w1, cl.w3});
    sl.w2 = linear({cl.w2});
    w.layers.push_back(std::move(sl));
  }
  w.rms_final = gain(model->rms_final);
  if (!c.shared_classifier) w.wcls = linear({cm.wcls});
  w.clear = std::move(model);
  return w;
}

}  // namespace

template <typename P>
Result<SecureWeights<P>> PublicWeights(const mpc::Context<P>& ctx,
                                       // NOLINTNEXTLINE(performance-unnecessary-value-param)
                                       std::shared_ptr<const RingModel> model) {  // kept in w
  if (!model) return InvalidArgument("no model");
  MPCACHE_RETURN_IF_ERROR(model->CheckShapes());
  if (model->is_compact()) return CompactPublicWeights<P>(ctx, std::move(model));
  const model::ModelConfig& c = model->config;
  const std::size_t d = c.dim, hd = c.hidden_dim, kv = c.kv_dim(), V = c.vocab_size;
  const auto gain = [&](const RingVec& g) { return mpc::PublicShares<P>(ctx.key(), g); };
  const auto linear = [](const RingVec& w, std::size_t rows, std::size_t cols) {
    SecureLinear<P> out;
    out.rows = rows;
    out.cols = cols;
    out.pub = w;
    return out;
  };
  SecureWeights<P> w;
  w.config = c;
  w.frac_bits = model->frac_bits;
  w.embedding = linear(model->embedding, V, d);
  for (const RingLayer& rl : model->layers) {
    SecureLayer<P> sl;
    sl.rms_att = gain(rl.rms_att);
    sl.rms_ffn = gain(rl.rms_ffn);
    sl.wqkv = linear(rl.wqkv, d + 2 * kv, d);
    sl.wo = linear(rl.wo, d, d);
    sl.w13 = linear(rl.w13, 2 * hd, d);
    sl.w2 = linear(rl.w2, d, hd);
    w.layers.push_back(std::move(sl));
  }
  w.rms_final = gain(model->rms_final);
  if (!c.shared_classifier) w.wcls = linear(model->wcls, V, d);
  w.clear = std::move(model);
  return w;
}

template <typename P>
Result<SecureWeights<P>> PrivateWeights(mpc::Context<P>& ctx, RingModel my_share) {
  if (my_share.is_compact()) {
    return InvalidArgument(
        "private weights come from share files (mpcache-model share), not from a compact "
        "public checkpoint");
  }
  MPCACHE_RETURN_IF_ERROR(my_share.CheckShapes());
  const model::ModelConfig& c = my_share.config;
  const std::size_t d = c.dim, hd = c.hidden_dim, kv = c.kv_dim(), V = c.vocab_size;

  // Every party inputs its share (authenticated through the dealer's input masks).
  RingVec flat;
  my_share.ForEachTensor([&](const std::string&, RingVec& t) {
    flat.insert(flat.end(), t.begin(), t.end());
    RingVec().swap(t);
  });
  const std::size_t n = flat.size();
  Shares<P> sum(n);
  for (mpc::PartyId owner = 0; owner < ctx.num_parties(); ++owner) {
    const std::span<const std::uint64_t> mine = ctx.self() == owner
                                                    ? std::span<const std::uint64_t>(flat)
                                                    : std::span<const std::uint64_t>();
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> part, mpc::Input<P>(ctx, owner, mine, n));
    mpc::AddInPlace(sum, part);
  }
  RingVec().swap(flat);

  // Cut [W] back into tensors in the same order; collect the matrices to mask.
  std::size_t off = 0;
  const auto take = [&](std::size_t count) {
    Shares<P> s = sum.Slice(off, count);
    off += count;
    return s;
  };
  std::vector<mpc::FixedRequest<P>> requests;
  const auto matrix = [&](std::size_t rows, std::size_t cols) {
    requests.push_back({take(rows * cols), rows, cols});
  };
  SecureWeights<P> w;
  w.config = c;
  w.frac_bits = my_share.frac_bits;
  w.is_private = true;
  matrix(V, d);  // embedding
  for (int l = 0; l < c.n_layers; ++l) {
    SecureLayer<P> sl;
    sl.rms_att = take(d);
    matrix(d + 2 * kv, d);
    matrix(d, d);
    sl.rms_ffn = take(d);
    matrix(2 * hd, d);
    matrix(d, hd);
    w.layers.push_back(std::move(sl));
  }
  w.rms_final = take(d);
  if (!c.shared_classifier) matrix(V, d);
  if (off != n) return Internal("private weights: tensor layout mismatch");
  sum = Shares<P>();

  MPCACHE_ASSIGN_OR_RETURN(std::vector<mpc::FixedOperand<P>> fixed,
                           mpc::MaskFixedMany<P>(ctx, std::move(requests)));
  std::size_t next = 0;
  const auto linear = [&](SecureLinear<P>& lin) {
    lin.fixed = std::move(fixed[next++]);
    lin.rows = lin.fixed.rows;
    lin.cols = lin.fixed.cols;
  };
  linear(w.embedding);
  for (SecureLayer<P>& sl : w.layers) {
    linear(sl.wqkv);
    linear(sl.wo);
    linear(sl.w13);
    linear(sl.w2);
  }
  if (!c.shared_classifier) linear(w.wcls);
  return w;
}

template Shares<mpc::SemiHonest> PublicProduct(const mpc::Context<mpc::SemiHonest>&,
                                               const SecureLinear<mpc::SemiHonest>&,
                                               const Shares<mpc::SemiHonest>&);
template Shares<mpc::Spdz2k> PublicProduct(const mpc::Context<mpc::Spdz2k>&,
                                           const SecureLinear<mpc::Spdz2k>&,
                                           const Shares<mpc::Spdz2k>&);
template Shares<mpc::SemiHonest> PublicLookup(const mpc::Context<mpc::SemiHonest>&,
                                              const SecureLinear<mpc::SemiHonest>&,
                                              const Shares<mpc::SemiHonest>&);
template Shares<mpc::Spdz2k> PublicLookup(const mpc::Context<mpc::Spdz2k>&,
                                          const SecureLinear<mpc::Spdz2k>&,
                                          const Shares<mpc::Spdz2k>&);
template Result<SecureWeights<mpc::SemiHonest>> PublicWeights(const mpc::Context<mpc::SemiHonest>&,
                                                              std::shared_ptr<const RingModel>);
template Result<SecureWeights<mpc::Spdz2k>> PublicWeights(const mpc::Context<mpc::Spdz2k>&,
                                                          std::shared_ptr<const RingModel>);
template Result<SecureWeights<mpc::SemiHonest>> PrivateWeights(mpc::Context<mpc::SemiHonest>&,
                                                               RingModel);
template Result<SecureWeights<mpc::Spdz2k>> PrivateWeights(mpc::Context<mpc::Spdz2k>&, RingModel);

}  // namespace mpcache::infer
