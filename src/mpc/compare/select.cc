#include "mpc/compare/select.h"

#include <algorithm>
#include <string>

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

Status CheckShape(std::size_t size, std::size_t rows, std::size_t cols) {
  if (cols == 0 || rows * cols != size) {
    return InvalidArgument("a " + std::to_string(rows) + " x " + std::to_string(cols) +
                           " selection over " + std::to_string(size) + " values");
  }
  return Status::Ok();
}

}  // namespace

std::uint64_t ArgMaxRounds(std::size_t cols) {
  std::uint64_t levels = 0;
  for (std::size_t w = cols; w > 1; w -= w / 2) ++levels;
  return levels * (kLtzRounds + 1);
}

std::uint64_t ArgMaxBytesPerPeer(std::size_t rows, std::size_t cols) {
  std::uint64_t bytes = 0;
  std::size_t span = 1;
  for (std::size_t w = cols; w > 1; w -= w / 2, span *= 2) {
    const std::size_t pairs = w / 2;
    std::size_t paired_cols = 0;  // columns covered by the pairs of one row
    for (std::size_t i = 0; i < pairs; ++i) {
      paired_cols += std::min((2 * i + 2) * span, cols) - 2 * i * span;
    }
    bytes += LtzBytesPerPeer(rows * pairs);
    bytes += 16 * rows * (pairs + paired_cols);  // one Beaver batch: d and e per product
  }
  return bytes;
}

template <typename P>
Result<Shares<P>> RowMax(BinaryContext<P>& ctx, const Shares<P>& x, std::size_t rows,
                         std::size_t cols) {
  MPCACHE_RETURN_IF_ERROR(CheckShape(x.size(), rows, cols));
  SecureBackend<P> be(ctx);
  Shares<P> out = mpcache::RowMax(be, x, rows, cols);
  if (!be.status().ok()) return be.status().error();
  return out;
}

template <typename P>
Result<ArgMaxResult<P>> RowArgMax(BinaryContext<P>& ctx, const Shares<P>& x, std::size_t rows,
                                  std::size_t cols) {
  MPCACHE_RETURN_IF_ERROR(CheckShape(x.size(), rows, cols));
  const ShareKey& key = ctx.arith().key();
  Shares<P> vals = x;
  const std::uint64_t one = 1;
  Shares<P> oh = PublicShares<P>(key, std::vector<std::uint64_t>(rows * cols, one));
  std::size_t w = cols, span = 1;
  while (w > 1) {
    const std::size_t pairs = w / 2;
    std::vector<std::size_t> ia, ib, sidx, pidx;
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t i = 0; i < pairs; ++i) {
        ia.push_back(r * w + 2 * i);
        ib.push_back(r * w + 2 * i + 1);
        const std::size_t end = std::min((2 * i + 2) * span, cols);
        for (std::size_t p = 2 * i * span; p < end; ++p) {
          sidx.push_back(r * pairs + i);
          pidx.push_back(r * cols + p);
        }
      }
    }
    Shares<P> a = GatherShares(vals, ia);
    Shares<P> diff = Sub(a, GatherShares(vals, ib));
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> s, LessThanZero(ctx, diff));  // [a < b]
    Shares<P> s_wide = GatherShares(s, sidx);
    Shares<P> oh_paired = GatherShares(oh, pidx);
    BeaverBatch<P> batch(ctx.arith());
    const std::size_t h_val = batch.Prepare(s, diff);
    const std::size_t h_oh = batch.Prepare(s_wide, oh_paired);
    MPCACHE_RETURN_IF_ERROR(batch.Exchange());
    Shares<P> m = Sub(a, batch.Take(h_val));
    Shares<P> prod = batch.Take(h_oh);
    // One-hot: A positions oh - s oh, B positions s oh.
    std::size_t k = 0;
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t i = 0; i < pairs; ++i) {
        const std::size_t mid = std::min((2 * i + 1) * span, cols);
        const std::size_t end = std::min((2 * i + 2) * span, cols);
        for (std::size_t p = 2 * i * span; p < end; ++p, ++k) {
          const std::size_t at = r * cols + p;
          if (p < mid) {
            oh.v[at] -= prod.v[k];
            if constexpr (P::kMalicious) oh.m[at] -= prod.m[k];
          } else {
            SetAt(oh, at, prod, k);
          }
        }
      }
    }
    const std::size_t next = w - pairs;
    Shares<P> nv(rows * next);
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t i = 0; i < pairs; ++i) SetAt(nv, r * next + i, m, r * pairs + i);
      if (next != pairs) SetAt(nv, r * next + pairs, vals, r * w + w - 1);
    }
    vals = std::move(nv);
    w = next;
    span *= 2;
  }
  ArgMaxResult<P> out;
  out.max = std::move(vals);
  out.one_hot = std::move(oh);
  return out;
}

template <typename P>
Result<TopKResult<P>> RowTopK(BinaryContext<P>& ctx, const Shares<P>& x, std::size_t rows,
                              std::size_t cols, std::size_t k) {
  MPCACHE_RETURN_IF_ERROR(CheckShape(x.size(), rows, cols));
  if (k == 0 || k > cols) {
    return InvalidArgument("top-" + std::to_string(k) + " of " + std::to_string(cols) + " columns");
  }
  TopKResult<P> out;
  out.values = Shares<P>(rows * k);
  out.selection = Shares<P>(rows * k * cols);
  Shares<P> cur = x;
  const std::uint64_t push_down = std::uint64_t{1} << 60;
  for (std::size_t j = 0; j < k; ++j) {
    MPCACHE_ASSIGN_OR_RETURN(ArgMaxResult<P> am, RowArgMax(ctx, cur, rows, cols));
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

#define MPCACHE_INSTANTIATE_SELECT(P)                                                             \
  template Result<Shares<P>> RowMax<P>(BinaryContext<P>&, const Shares<P>&, std::size_t,          \
                                       std::size_t);                                              \
  template Result<ArgMaxResult<P>> RowArgMax<P>(BinaryContext<P>&, const Shares<P>&, std::size_t, \
                                                std::size_t);                                     \
  template Result<TopKResult<P>> RowTopK<P>(BinaryContext<P>&, const Shares<P>&, std::size_t,     \
                                            std::size_t, std::size_t);
MPCACHE_INSTANTIATE_SELECT(SemiHonest)
MPCACHE_INSTANTIATE_SELECT(Spdz2k)

}  // namespace mpcache::mpc
