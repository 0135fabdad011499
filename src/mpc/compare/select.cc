#include "mpc/compare/select.h"

#include <algorithm>
#include <string>

#include "mpc/beaver.h"

namespace mpcache::mpc {

namespace {

template <typename P>
Shares<P> GatherShares(const Shares<P>& a, const std::vector<std::size_t>& idx) {
  Shares<P> out(idx.size());
  for (std::size_t i = 0; i < idx.size(); ++i) out.v[i] = a.v[idx[i]];
  if constexpr (P::kMalicious) {
    for (std::size_t i = 0; i < idx.size(); ++i) out.m[i] = a.m[idx[i]];
  }
  return out;
}

template <typename P>
void SetAt(Shares<P>& dst, std::size_t i, const Shares<P>& src, std::size_t j) {
  dst.v[i] = src.v[j];
  if constexpr (P::kMalicious) dst.m[i] = src.m[j];
}

// RowArgMax's tournament: groups of this many consecutive candidates per level.
constexpr std::size_t kArgGroup = 4;

Status CheckShape(std::size_t size, std::size_t rows, std::size_t cols) {
  if (cols == 0 || rows * cols != size) {
    return InvalidArgument("a " + std::to_string(rows) + " x " + std::to_string(cols) +
                           " selection over " + std::to_string(size) + " values");
  }
  return Status::Ok();
}

}  // namespace

std::uint64_t ArgMaxRounds(std::size_t cols, int bits) {
  std::uint64_t rounds = 0;
  for (std::size_t w = cols; w > 1; w = (w + kArgGroup - 1) / kArgGroup) {
    // a group of 3 or 4 needs the second product stage
    rounds += static_cast<std::uint64_t>(LtzRounds(bits)) + (w > 2 ? 2 : 1);
  }
  return rounds;
}

std::uint64_t ArgMaxBytesPerPeer(std::size_t rows, std::size_t cols, int bits,
                                 std::uint64_t cmp_open_bytes, std::uint64_t mul_open_bytes) {
  std::uint64_t bytes = 0;
  std::size_t span = 1;
  for (std::size_t w = cols; w > 1; w = (w + kArgGroup - 1) / kArgGroup, span *= kArgGroup) {
    std::size_t pairs = 0, products = 0;  // per row
    for (std::size_t k = 0; k * kArgGroup < w; ++k) {
      const std::size_t g = std::min(kArgGroup, w - k * kArgGroup);
      pairs += g * (g - 1) / 2;
      for (std::size_t i = 0; i < g; ++i) {
        const std::size_t c = k * kArgGroup + i;
        const std::size_t payload = 1 + std::min((c + 1) * span, cols) - c * span;  // x, one-hot
        if (g == 2) products += payload;                                            // b x payload
        if (g == 3) products += 1 + payload;      // b0 b1; then x payload
        if (g == 4) products += 1 + 2 * payload;  // b0 b1, b2 x payload; then their product
      }
    }
    bytes += LtzBytesPerPeer(rows * pairs, bits, cmp_open_bytes);
    bytes += 2 * mul_open_bytes * rows * products;  // Beaver: d and e per product, to each peer
  }
  return bytes;
}

template <typename P>
Result<Shares<P>> RowMax(BinaryContext<P>& ctx, const Shares<P>& x, std::size_t rows,
                         std::size_t cols, int bits) {
  MPCACHE_RETURN_IF_ERROR(CheckShape(x.size(), rows, cols));
  MPCACHE_RETURN_IF_ERROR(CheckCompareBits(bits));
  SecureBackend<P> be(ctx);
  Shares<P> out = be.Materialize(mpcache::RowMax(be, x, rows, cols, bits));
  if (!be.status().ok()) return be.status().error();
  return out;
}

template <typename P>
Result<ArgMaxResult<P>> RowArgMax(BinaryContext<P>& ctx, const Shares<P>& x, std::size_t rows,
                                  std::size_t cols, int bits) {
  MPCACHE_RETURN_IF_ERROR(CheckShape(x.size(), rows, cols));
  MPCACHE_RETURN_IF_ERROR(CheckCompareBits(bits));
  const ShareKey& key = ctx.arith().key();
  Shares<P> vals = x;
  Shares<P> oh = PublicShares<P>(key, std::vector<std::uint64_t>(rows * cols, 1));
  // A reference to a share: in the level's pool (0), stage-1 products (1) or stage-2 (2).
  struct Ref {
    int src;
    std::size_t i;
  };
  std::size_t w = cols, span = 1;
  while (w > 1) {
    const std::size_t groups = (w + kArgGroup - 1) / kArgGroup;
    auto group_size = [&](std::size_t k) { return std::min(kArgGroup, w - k * kArgGroup); };
    // Every pair (i < j) of every group of 4 candidates: [x_i < x_j], one batch.
    std::vector<std::size_t> ia, ib;
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t k = 0; k < groups; ++k) {
        const std::size_t g = group_size(k), base = r * w + k * kArgGroup;
        for (std::size_t i = 0; i < g; ++i) {
          for (std::size_t j = i + 1; j < g; ++j) {
            ia.push_back(base + i);
            ib.push_back(base + j);
          }
        }
      }
    }
    const std::size_t npairs = ia.size();
    MPCACHE_ASSIGN_OR_RETURN(
        Shares<P> lt, LessThanZero(ctx, Sub(GatherShares(vals, ia), GatherShares(vals, ib)), bits));
    // pool = [1 - lt (x_i beats x_j, i < j: >=) | lt (x_j beats x_i: >) | vals | one-hots].
    Shares<P> pool = Sub(PublicShares<P>(key, std::vector<std::uint64_t>(npairs, 1)), lt);
    pool.Append(lt);
    const std::size_t vals_at = pool.size();
    pool.Append(vals);
    const std::size_t oh_at = pool.size();
    pool.Append(oh);
    // Member i of a group wins with w_i = prod of its g - 1 beat bits; its payload (value,
    // then one-hot over its column range) is multiplied by w_i: (b0 b1)(b2 payload).
    std::vector<Ref> l1, r1, l2, r2;
    std::vector<std::vector<Ref>> result;  // per member: w_i * payload
    std::size_t pair = 0;
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t k = 0; k < groups; ++k) {
        const std::size_t g = group_size(k);
        std::vector<std::vector<std::size_t>> bits(g);
        for (std::size_t i = 0; i < g; ++i) {
          for (std::size_t j = i + 1; j < g; ++j, ++pair) {
            bits[i].push_back(pair);
            bits[j].push_back(npairs + pair);
          }
        }
        for (std::size_t i = 0; i < g; ++i) {
          const std::size_t c = k * kArgGroup + i;
          std::vector<std::size_t> payload = {vals_at + r * w + c};
          for (std::size_t col = c * span; col < std::min((c + 1) * span, cols); ++col) {
            payload.push_back(oh_at + r * cols + col);
          }
          std::vector<Ref> res;
          if (g == 1) {
            for (std::size_t p : payload) res.push_back({0, p});
          } else if (g == 2) {
            for (std::size_t p : payload) {
              res.push_back({1, l1.size()});
              l1.push_back({0, bits[i][0]});
              r1.push_back({0, p});
            }
          } else {
            const Ref u{1, l1.size()};
            l1.push_back({0, bits[i][0]});
            r1.push_back({0, bits[i][1]});
            for (std::size_t p : payload) {
              Ref v{0, p};
              if (g == 4) {
                v = {1, l1.size()};
                l1.push_back({0, bits[i][2]});
                r1.push_back({0, p});
              }
              res.push_back({2, l2.size()});
              l2.push_back(u);
              r2.push_back(v);
            }
          }
          result.push_back(std::move(res));
        }
      }
    }
    Shares<P> s1, s2;
    auto fetch = [&](const std::vector<Ref>& refs) {
      Shares<P> out(refs.size());
      for (std::size_t q = 0; q < refs.size(); ++q) {
        const Shares<P>& src = refs[q].src == 0 ? pool : (refs[q].src == 1 ? s1 : s2);
        SetAt(out, q, src, refs[q].i);
      }
      return out;
    };
    MPCACHE_ASSIGN_OR_RETURN(s1, Mul(ctx.arith(), fetch(l1), fetch(r1)));
    if (!l2.empty()) {
      MPCACHE_ASSIGN_OR_RETURN(s2, Mul(ctx.arith(), fetch(l2), fetch(r2)));
    }
    // Next values: the sum of each group's w_i x_i; one-hots: w_i oh_i on member i's range.
    Shares<P> nv(rows * groups);
    std::size_t m = 0;
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t k = 0; k < groups; ++k) {
        const std::size_t g = group_size(k);
        for (std::size_t i = 0; i < g; ++i, ++m) {
          const Shares<P> got = fetch(result[m]);
          nv.v[r * groups + k] += got.v[0];
          if constexpr (P::kMalicious) nv.m[r * groups + k] += got.m[0];
          const std::size_t c = k * kArgGroup + i;
          for (std::size_t q = 1; q < got.size(); ++q)
            SetAt(oh, r * cols + c * span + q - 1, got, q);
        }
      }
    }
    vals = std::move(nv);
    w = groups;
    span *= kArgGroup;
  }
  ArgMaxResult<P> out;
  out.max = std::move(vals);
  out.one_hot = std::move(oh);
  return out;
}

template <typename P>
Result<TopKResult<P>> RowTopK(BinaryContext<P>& ctx, const Shares<P>& x, std::size_t rows,
                              std::size_t cols, std::size_t k, int bits) {
  MPCACHE_RETURN_IF_ERROR(CheckShape(x.size(), rows, cols));
  MPCACHE_RETURN_IF_ERROR(CheckCompareBits(bits));
  if (k == 0 || k > cols) {
    return InvalidArgument("top-" + std::to_string(k) + " of " + std::to_string(cols) + " columns");
  }
  TopKResult<P> out;
  out.values = Shares<P>(rows * k);
  out.selection = Shares<P>(rows * k * cols);
  Shares<P> cur = x;
  // Below every value (|x| < 2^(bits-3)) and still inside the comparison's range.
  const std::uint64_t push_down = std::uint64_t{1} << (bits - 2);
  for (std::size_t j = 0; j < k; ++j) {
    MPCACHE_ASSIGN_OR_RETURN(ArgMaxResult<P> am, RowArgMax(ctx, cur, rows, cols, bits));
    for (std::size_t r = 0; r < rows; ++r) {
      SetAt(out.values, r * k + j, am.max, r);
      for (std::size_t c = 0; c < cols; ++c) {
        SetAt(out.selection, (r * k + j) * cols + c, am.one_hot, r * cols + c);
      }
    }
    if (j + 1 < k) {
      SubInPlace(cur, MulPublic<P>(am.one_hot, std::span<const std::uint64_t>(&push_down, 1)));
    }
  }
  return out;
}

// P names a type in explicit instantiations: it cannot be parenthesised.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define MPCACHE_INSTANTIATE_SELECT(P)                                                             \
  template Result<Shares<P>> RowMax<P>(BinaryContext<P>&, const Shares<P>&, std::size_t,          \
                                       std::size_t, int);                                         \
  template Result<ArgMaxResult<P>> RowArgMax<P>(BinaryContext<P>&, const Shares<P>&, std::size_t, \
                                                std::size_t, int);                                \
  template Result<TopKResult<P>> RowTopK<P>(BinaryContext<P>&, const Shares<P>&, std::size_t,     \
                                            std::size_t, std::size_t, int);
// NOLINTEND(bugprone-macro-parentheses)
MPCACHE_INSTANTIATE_SELECT(SemiHonest)
MPCACHE_INSTANTIATE_SELECT(Spdz2k)

}  // namespace mpcache::mpc
