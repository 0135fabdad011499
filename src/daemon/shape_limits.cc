#include "daemon/shape_limits.h"

#include <algorithm>
#include <iterator>

#include "common/checked.h"

namespace mpcache::daemon {

Result<MatrixShapeLimits> ShapeLimitsForModel(const model::ModelConfig& c,
                                              const std::optional<model::MpcachePolicy>& mpcache) {
  MPCACHE_RETURN_IF_ERROR(c.Validate());
  const auto u = [](int v) { return static_cast<std::uint64_t>(v); };
  const std::uint64_t d = u(c.dim), hd = u(c.hidden_dim), v = u(c.vocab_size);
  const std::uint64_t kv = u(c.kv_dim()), hs = u(c.head_size()), nh = u(c.n_heads);
  const std::uint64_t nkv = u(c.n_kv_heads);
  // Masks (rows x cols): embedding / classifier (v x d), wqkv (d + 2kv x d), wo (d x d),
  // w13 (2hd x d), w2 (d x hd), KV blocks (at most seq_len rows x kv).
  const std::uint64_t seq = u(c.seq_len);
  const std::uint64_t rows[] = {v, d + 2 * kv, d, 2 * hd, d, seq};
  const std::uint64_t cols[] = {d, d, d, d, hd, kv};
  MatrixShapeLimits out;
  out.max_elements = 0;
  out.max_dim = 0;
  for (std::size_t i = 0; i < std::size(rows); ++i) {
    MPCACHE_ASSIGN_OR_RETURN(std::uint64_t n, MulSize(rows[i], cols[i], "model matrix size"));
    out.max_elements = std::max(out.max_elements, n);
    out.max_dim = std::max({out.max_dim, rows[i], cols[i]});
  }
  // Matrix triples: other = 1 (B and C are a row or column of a mask). Attention triples:
  // n_heads (other) x head size or x the attended rows (at most seq_len).
  out.max_other = std::max<std::uint64_t>(1, nh);
  MPCACHE_ASSIGN_OR_RETURN(std::uint64_t attention,
                           MulSize(nh, std::max({hs, nkv, seq}), "model attention triple size"));
  out.max_elements = std::max({out.max_elements, attention, out.max_dim});
  out.source = "the model's shapes: " + c.Describe();
  if (mpcache) {
    // S: kept x candidates (both below seq / cluster_tokens); gather B (candidates x n_heads
    // cs) and C (kept x n_heads cs), scatter B (n_heads cs x kept) and C (n_heads cs x
    // candidates): at most n_heads x seq elements.
    const std::uint64_t cs = u(mpcache->cluster_tokens), clusters = (seq + cs - 1) / cs;
    MPCACHE_ASSIGN_OR_RETURN(std::uint64_t other, MulSize(nh, cs, "MPCache triple size"));
    MPCACHE_ASSIGN_OR_RETURN(std::uint64_t one_hot, MulSize(clusters, clusters, "MPCache one-hot"));
    // The attention triples also carry the representatives' rows: the scores' up to seq +
    // 2 clusters (level 1, the residual path's mean keys) + sub-clusters (level 2).
    const std::uint64_t subs =
        mpcache->two_levels() ? (seq + u(mpcache->level2_tokens) - 1) / u(mpcache->level2_tokens)
                              : 0;
    MPCACHE_ASSIGN_OR_RETURN(std::uint64_t spread,
                             MulSize(nh, seq + cs + 2 * clusters + subs, "MPCache triple size"));
    out.max_other = std::max(out.max_other, other);
    out.max_elements = std::max({out.max_elements, one_hot, spread});
    out.source += " with MPCache clusters of " + std::to_string(cs) + " tokens";
    if (mpcache->two_levels()) {
      // Level 2: S2 (kept x gathered sub-clusters, both below seq / cs2); the first gather
      // also carries the s sub-scores (other = n_heads cs + s), the second gathers and
      // scatters n_heads cs2 columns (below the first's).
      const std::uint64_t cs2 = u(mpcache->level2_tokens), subs = (seq + cs2 - 1) / cs2;
      MPCACHE_ASSIGN_OR_RETURN(std::uint64_t one_hot2, MulSize(subs, subs, "MPCache one-hot"));
      out.max_other = std::max(out.max_other, other + cs / cs2);
      out.max_elements = std::max(out.max_elements, one_hot2);
      out.source += " and sub-clusters of " + std::to_string(cs2);
    }
    if (mpcache->evicts()) {
      // Static eviction: the one-hot (kept x candidates, both below seq) times the
      // candidates' [K | V] (candidates x 2 kv; impact re-weighting adds the importance
      // column): other = 2 kv (+ 1).
      const std::uint64_t width = 2 * kv + (mpcache->impact_weight > 0 ? 1 : 0);
      MPCACHE_ASSIGN_OR_RETURN(std::uint64_t evict, MulSize(seq, seq, "MPCache eviction one-hot"));
      MPCACHE_ASSIGN_OR_RETURN(std::uint64_t rows, MulSize(seq, width, "MPCache eviction rows"));
      out.max_other = std::max(out.max_other, width);
      out.max_elements = std::max({out.max_elements, evict, rows});
      if (mpcache->eviction_score == model::EvictionScore::kSigmoid) {
        // The window's sigmoids ride in the scatters with the weights: 2 n_heads cs rows
        // (other), C up to 2 n_heads x seq.
        out.max_other = std::max(out.max_other, 2 * other);
        out.max_elements = std::max(out.max_elements, 2 * spread);
      }
      out.source += " and the look-once eviction";
    }
  }
  return out;
}

}  // namespace mpcache::daemon
