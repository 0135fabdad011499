// MpcacheKv's cluster representatives (infer/mpcache_kv.h): computed once per completed
// cluster, held in their own fixed-mask blocks (level 1: one row per cluster; level 2: one
// row per sub-cluster), scored in the same opening of q as the keys.
#include <string>

#include "infer/mpcache_kv.h"
#include "mpc/compare/select.h"
#include "mpc/trunc.h"

namespace mpcache::infer {

using mpc::Shares;

namespace {

// Compared values per RowMax call: a long prefill's clusters go in chunks of this many, and
// so does one cluster of a wide model (7B: 2 kv_dim cs = 262 144 values per cluster, four
// calls), which bounds the comparisons' working memory (their bit triples and shares).
constexpr std::size_t kRepChunkValues = std::size_t{1} << 16;
// Malicious mode keeps every opened value for the next batched MAC check; a long prefill's
// representatives open millions (7B: ~3 million per cluster and layer), so past this many
// pending values they are checked at once rather than held until the step's check.
constexpr std::size_t kCheckPendingBeyond = std::size_t{1} << 22;

}  // namespace

template <typename P>
Status MpcacheKv<P>::EnsureRepBlocks(mpc::Context<P>& ctx, std::vector<mpc::FixedBlock<P>>& blocks,
                                     std::size_t rows) {
  const auto cap = static_cast<std::size_t>(layout().block_tokens());
  const std::size_t kv = full_->heads().kv_dim;
  while (blocks.size() * cap < rows) {
    MPCACHE_ASSIGN_OR_RETURN(mpc::MatrixMask<P> mask, ctx.prep().GetMatrixMask(cap, kv));
    mpc::FixedBlock<P> b;
    b.mask_id = mask.id;
    b.capacity = cap;
    b.x = Shares<P>(cap * kv);
    b.a = std::move(mask.a);
    b.d.reserve(cap * kv);
    blocks.push_back(std::move(b));
  }
  return Status::Ok();
}

template <typename P>
std::vector<mpc::BlockUse<P>> MpcacheKv<P>::RepUses(const std::vector<mpc::FixedBlock<P>>& blocks,
                                                    std::size_t rows) {
  std::vector<mpc::BlockUse<P>> out;
  for (std::size_t b = 0; b < blocks.size() && b * blocks[b].capacity < rows; ++b) {
    out.push_back({&blocks[b], std::min(blocks[b].capacity, rows - b * blocks[b].capacity)});
  }
  return out;
}

template <typename P>
Status MpcacheKv<P>::UpdateRepresentatives(mpc::Context<P>& ctx, int layer, std::size_t m) {
  Reps& reps = reps_[static_cast<std::size_t>(layer)];
  const std::size_t kv = full_->heads().kv_dim;
  const auto cs = static_cast<std::size_t>(policy_.cluster_tokens);
  // A long prefill's clusters in chunks of about kRepChunkValues compared values.
  const std::size_t chunk = std::max<std::size_t>(1, kRepChunkValues / (2 * kv * cs));
  while (reps.count < m) {
    MPCACHE_RETURN_IF_ERROR(AddRepresentatives(ctx, layer, std::min(chunk, m - reps.count)));
  }
  return Status::Ok();
}

template <typename P>
Status MpcacheKv<P>::AddRepresentatives(mpc::Context<P>& ctx, int layer, std::size_t n) {
  Reps& reps = reps_[static_cast<std::size_t>(layer)];
  const std::size_t kv = full_->heads().kv_dim, m = reps.count + n;
  const auto cs = static_cast<std::size_t>(policy_.cluster_tokens);
  const auto s = static_cast<std::size_t>(policy_.subclusters());
  const std::size_t cs2 = cs / s;
  const auto bt = static_cast<std::size_t>(layout().block_tokens());
  const auto& keys = full_->key_blocks(layer);
  // Key (sub-cluster g = j s + u of the n new clusters, token t) from the key blocks' shares.
  const auto key_at = [&](std::size_t g, std::size_t t) {
    const std::size_t pos = (reps.count + 1) * cs + g * cs2 + t;
    return std::pair<const Shares<P>*, std::size_t>(&keys[pos / bt].x, (pos % bt) * kv);
  };
  // rep2: the n s sub-clusters' representatives (the clusters' own when s == 1), rep: the
  // clusters'. Both exact: max and min are associative, and so is the sum.
  Shares<P> rep2(n * s * kv), rep(n * kv);
  if (policy_.representative == model::Representative::kMean) {
    for (std::size_t g = 0; g < n * s; ++g) {
      for (std::size_t t = 0; t < cs2; ++t) {
        const auto [x, off] = key_at(g, t);
        for (std::size_t i = 0; i < kv; ++i) rep2.AddFrom(g * kv + i, *x, off + i);
      }
      for (std::size_t i = 0; i < kv; ++i) rep.AddFrom((g / s) * kv + i, rep2, g * kv + i);
    }
  } else {
    // Rows (g, i, sign) of cs2 values: k_t[i] and -k_t[i]; their maxima are max and -min.
    Shares<P> rows(n * s * kv * 2 * cs2);
    for (std::size_t g = 0; g < n * s; ++g) {
      for (std::size_t t = 0; t < cs2; ++t) {
        const auto [x, off] = key_at(g, t);
        for (std::size_t i = 0; i < kv; ++i) {
          const std::size_t r = (g * kv + i) * 2;
          rows.CopyFrom(r * cs2 + t, *x, off + i);
          rows.v[(r + 1) * cs2 + t] = 0 - x->v[off + i];
          if constexpr (P::kMalicious) rows.m[(r + 1) * cs2 + t] = 0 - x->m[off + i];
        }
      }
    }
    const std::size_t total = n * s * kv * 2,
                      per_call = std::max<std::size_t>(1, kRepChunkValues / cs2);
    Shares<P> mx2;
    for (std::size_t r = 0; r < total; r += per_call) {
      const std::size_t count = std::min(per_call, total - r);
      MPCACHE_ASSIGN_OR_RETURN(
          Shares<P> part,
          mpc::RowMax<P>(ctx_, rows.Slice(r * cs2, count * cs2), count, cs2, compare_bits_));
      mx2.Append(part);
      if (P::kMalicious &&
          ctx_.pending_checks() + ctx_.arith().pending_checks() > kCheckPendingBeyond) {
        MPCACHE_RETURN_IF_ERROR(mpc::CheckAllMacs<P>(ctx_));
      }
    }
    Shares<P> mx1 = mx2;
    if (s > 1) {
      // The clusters' max and -min over their s sub-clusters' (rows (j, i, sign) of s).
      Shares<P> subs(n * kv * 2 * s);
      for (std::size_t j = 0; j < n; ++j) {
        for (std::size_t u = 0; u < s; ++u) {
          for (std::size_t e = 0; e < kv * 2; ++e) {
            subs.CopyFrom((j * kv * 2 + e) * s + u, mx2, ((j * s + u) * kv) * 2 + e);
          }
        }
      }
      MPCACHE_ASSIGN_OR_RETURN(mx1, mpc::RowMax<P>(ctx_, subs, n * kv * 2, s, compare_bits_));
    }
    // r = a max + (256 - a) min = a max - (256 - a) (-min): exact, f + 8 bits.
    const auto a = static_cast<std::uint64_t>(policy_.AlphaQ()), b = 256 - a;
    const auto combine = [&](Shares<P>& to, const Shares<P>& mx, std::size_t count) {
      for (std::size_t e = 0; e < count; ++e) {
        to.v[e] = a * mx.v[2 * e] - b * mx.v[2 * e + 1];
        if constexpr (P::kMalicious) to.m[e] = a * mx.m[2 * e] - b * mx.m[2 * e + 1];
      }
    };
    combine(rep, mx1, n * kv);
    combine(rep2, mx2, n * s * kv);
  }
  MPCACHE_RETURN_IF_ERROR(EnsureRepBlocks(ctx, reps.blocks, m));
  std::vector<std::pair<mpc::FixedBlock<P>*, Shares<P>>> rows;
  for (std::size_t j = 0; j < n; ++j) {
    const std::size_t at = reps.count + j;
    rows.emplace_back(&reps.blocks[at / bt], rep.Slice(j * kv, kv));
  }
  if (s > 1) {
    // Level 2: sub-cluster u of cluster c + 1 is row c s + u, appended in the same round.
    MPCACHE_RETURN_IF_ERROR(EnsureRepBlocks(ctx, reps.blocks2, m * s));
    for (std::size_t g = 0; g < n * s; ++g) {
      const std::size_t at = reps.count * s + g;
      rows.emplace_back(&reps.blocks2[at / bt], rep2.Slice(g * kv, kv));
    }
  }
  MPCACHE_RETURN_IF_ERROR(mpc::AppendRows<P>(ctx, std::move(rows)));
  reps.count = m;
  return Status::Ok();
}

template <typename P>
Status MpcacheKv<P>::UpdateMeans(mpc::Context<P>& ctx, int layer, std::size_t m) {
  Reps& reps = reps_[static_cast<std::size_t>(layer)];
  if (reps.means >= m) return Status::Ok();
  const std::size_t kv = full_->heads().kv_dim, n = m - reps.means;
  const auto cs = static_cast<std::size_t>(policy_.cluster_tokens);
  const auto bt = static_cast<std::size_t>(layout().block_tokens());
  const auto& keys = full_->key_blocks(layer);
  const auto& values = full_->value_blocks(layer);
  // [sum k | sum v] of each new cluster (local), times MeanMultiplier, truncated (1 round).
  Shares<P> sums(n * 2 * kv);
  for (std::size_t j = 0; j < n; ++j) {
    for (std::size_t t = 0; t < cs; ++t) {
      const std::size_t pos = (reps.means + 1 + j) * cs + t, off = (pos % bt) * kv;
      for (std::size_t i = 0; i < kv; ++i) {
        sums.AddFrom(j * 2 * kv + i, keys[pos / bt].x, off + i);
        sums.AddFrom(j * 2 * kv + kv + i, values[pos / bt].x, off + i);
      }
    }
  }
  const std::uint64_t mult[] = {model::MeanMultiplier(policy_.cluster_tokens)};
  mpc::MulPublicInPlace(sums, std::span<const std::uint64_t>(mult));
  MPCACHE_ASSIGN_OR_RETURN(Shares<P> means, mpc::Trunc<P>(ctx, sums, model::kMeanShift));
  MPCACHE_RETURN_IF_ERROR(EnsureRepBlocks(ctx, reps.kbar, m));
  MPCACHE_RETURN_IF_ERROR(EnsureRepBlocks(ctx, reps.vbar, m));
  std::vector<std::pair<mpc::FixedBlock<P>*, Shares<P>>> rows;
  for (std::size_t j = 0; j < n; ++j) {
    const std::size_t at = reps.means + j;
    rows.emplace_back(&reps.kbar[at / bt], means.Slice(j * 2 * kv, kv));
    rows.emplace_back(&reps.vbar[at / bt], means.Slice(j * 2 * kv + kv, kv));
  }
  MPCACHE_RETURN_IF_ERROR(mpc::AppendRows<P>(ctx, std::move(rows)));
  reps.means = m;
  return Status::Ok();
}

// The class is instantiated in mpcache_kv.cc; these are its members defined here.
// NOLINTBEGIN(bugprone-macro-parentheses): P names a type.
#define MPCACHE_REPS_MEMBERS(P)                                                                 \
  template Status MpcacheKv<P>::EnsureRepBlocks(mpc::Context<P>&,                               \
                                                std::vector<mpc::FixedBlock<P>>&, std::size_t); \
  template std::vector<mpc::BlockUse<P>> MpcacheKv<P>::RepUses(                                 \
      const std::vector<mpc::FixedBlock<P>>&, std::size_t);                                     \
  template Status MpcacheKv<P>::UpdateRepresentatives(mpc::Context<P>&, int, std::size_t);      \
  template Status MpcacheKv<P>::AddRepresentatives(mpc::Context<P>&, int, std::size_t);         \
  template Status MpcacheKv<P>::UpdateMeans(mpc::Context<P>&, int, std::size_t);
MPCACHE_REPS_MEMBERS(mpc::SemiHonest)
MPCACHE_REPS_MEMBERS(mpc::Spdz2k)
#undef MPCACHE_REPS_MEMBERS
// NOLINTEND(bugprone-macro-parentheses)

}  // namespace mpcache::infer
