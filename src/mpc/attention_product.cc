#include "mpc/attention_product.h"

#include <map>
#include <string>
#include <utility>

#include "mpc/parallel.h"

namespace mpcache::mpc {

namespace {

std::string ShapeText(const HeadShape& h) {
  return std::to_string(h.n_heads) + " heads of " + std::to_string(h.head_size) + ", kv_dim " +
         std::to_string(h.kv_dim);
}

template <typename P>
Status CheckBlocks(const HeadShape& h, const std::vector<BlockUse<P>>& blocks) {
  if (h.n_heads == 0 || h.head_size == 0 || h.kv_dim == 0 || h.kv_dim % h.head_size != 0 ||
      h.n_heads % (h.kv_dim / h.head_size) != 0) {
    return InvalidArgument("attention product: bad head shape (" + ShapeText(h) + ")");
  }
  if (blocks.empty()) return InvalidArgument("attention product over no KV block");
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const BlockUse<P>& u = blocks[i];
    if (u.block == nullptr || u.rows == 0 || u.rows > u.block->rows ||
        u.block->x.size() != u.block->capacity * h.kv_dim) {
      return InvalidArgument("attention product: block " + std::to_string(i) + " uses " +
                             std::to_string(u.rows) + " rows of " +
                             std::to_string(u.block == nullptr ? 0 : u.block->rows) +
                             " appended (or is not a kv_dim-wide block)");
    }
  }
  return Status::Ok();
}

template <typename P>
std::size_t TotalRows(const std::vector<BlockUse<P>>& blocks) {
  std::size_t n = 0;
  for (const BlockUse<P>& u : blocks) n += u.rows;
  return n;
}

// The product's dealer triple for `blocks`, and the fresh operand opened against its B:
// E = fresh - B (the one opening of the product). `c_size` is the product's size.
template <typename P>
struct Opened {
  AttentionTriple<P> t;
  std::vector<std::uint64_t> e;
};
template <typename P>
Result<Opened<P>> OpenFresh(Context<P>& ctx, MaskSide side, const HeadShape& h,
                            const Shares<P>& fresh, const std::vector<BlockUse<P>>& blocks,
                            std::size_t c_size) {
  Opened<P> o;
  MPCACHE_ASSIGN_OR_RETURN(o.t, ctx.prep().GetAttentionTriple(ShapeOf(side, h, blocks)));
  if (o.t.b.size() != fresh.size() || o.t.c.size() != c_size) {
    return Internal("attention triple of the wrong size from the preprocessing");
  }
  MPCACHE_ASSIGN_OR_RETURN(o.e, ctx.OpenOwned(Sub(fresh, o.t.b)));
  return o;
}

}  // namespace

template <typename P>
AttentionShape ShapeOf(MaskSide side, const HeadShape& h, const std::vector<BlockUse<P>>& blocks) {
  AttentionShape s{
      .side = side, .n_heads = h.n_heads, .head_size = h.head_size, .kv_dim = h.kv_dim};
  for (const BlockUse<P>& u : blocks) {
    s.masks.push_back(u.block->mask_id);
    s.lens.push_back(u.rows);
  }
  return s;
}

namespace {

// Checks the rows against their blocks, stores their shares, counts them and uses up a full
// block's mask; returns X - A of every row, in order (their D once opened).
template <typename P>
Result<Shares<P>> StageRows(const std::vector<std::pair<FixedBlock<P>*, Shares<P>>>& rows) {
  Shares<P> masked;
  std::map<const FixedBlock<P>*, std::size_t> next;  // rows taken so far, per block
  for (std::size_t i = 0; i < rows.size(); ++i) {
    FixedBlock<P>& b = *rows[i].first;
    const Shares<P>& x = rows[i].second;
    const std::size_t kv = b.capacity == 0 ? 0 : b.x.size() / b.capacity;
    const std::size_t row = next.try_emplace(&b, b.rows).first->second++;
    if (row >= b.capacity || x.size() != kv || b.a.size() != b.x.size()) {
      return InvalidArgument("KV block append " + std::to_string(i) + ": a row of " +
                             std::to_string(x.size()) + " values into a block of " +
                             std::to_string(row) + "/" + std::to_string(b.capacity) + " rows of " +
                             std::to_string(kv));
    }
    masked.Append(Sub(x, b.a.Slice(row * kv, kv)));
  }
  for (const auto& [block, x] : rows) {
    FixedBlock<P>& b = *block;
    const std::size_t kv = x.size(), at = b.rows * kv;
    for (std::size_t e = 0; e < kv; ++e) b.x.v[at + e] = x.v[e];
    if constexpr (P::kMalicious) {
      for (std::size_t e = 0; e < kv; ++e) b.x.m[at + e] = x.m[e];
    }
    if (++b.rows == b.capacity) b.a = Shares<P>();  // the mask is used up
  }
  return masked;
}

// Appends the opened D rows to their blocks, in the order they were staged.
template <typename P>
Status FillRows(const std::vector<std::pair<FixedBlock<P>*, std::size_t>>& to,
                std::span<const std::uint64_t> d) {
  std::size_t off = 0;
  for (const auto& [block, kv] : to) {
    if (off + kv > d.size()) return Internal("KV append: fewer D values than rows");
    block->d.insert(block->d.end(), d.begin() + static_cast<std::ptrdiff_t>(off),
                    d.begin() + static_cast<std::ptrdiff_t>(off + kv));
    off += kv;
  }
  return off == d.size() ? Status::Ok() : Internal("KV append: more D values than rows");
}

template <typename P>
std::vector<std::pair<FixedBlock<P>*, std::size_t>> Targets(
    const std::vector<std::pair<FixedBlock<P>*, Shares<P>>>& rows) {
  std::vector<std::pair<FixedBlock<P>*, std::size_t>> to;
  to.reserve(rows.size());
  for (const auto& [block, x] : rows) to.emplace_back(block, x.size());
  return to;
}

// Every used row's D is there (a deferred append is opened by the product's own exchange).
template <typename P>
Status CheckOpenedRows(const HeadShape& h, const std::vector<BlockUse<P>>& blocks) {
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    if (blocks[i].block->d.size() < blocks[i].rows * h.kv_dim) {
      return Internal("attention product: block " + std::to_string(i) + " uses " +
                      std::to_string(blocks[i].rows) + " rows but only " +
                      std::to_string(blocks[i].block->d.size() / h.kv_dim) +
                      " were opened (a deferred append whose source was dropped?)");
    }
  }
  return Status::Ok();
}

}  // namespace

template <typename P>
Status AppendRows(Context<P>& ctx, std::vector<std::pair<FixedBlock<P>*, Shares<P>>> rows) {
  if (rows.empty()) return Status::Ok();
  MPCACHE_ASSIGN_OR_RETURN(Shares<P> masked, StageRows(rows));
  MPCACHE_ASSIGN_OR_RETURN(std::vector<std::uint64_t> d, ctx.OpenOwned(std::move(masked)));
  return FillRows(Targets(rows), d);
}

template <typename P>
Result<std::shared_ptr<DeferredRows<P>>> DeferRows(
    Context<P>& ctx, std::vector<std::pair<FixedBlock<P>*, Shares<P>>> rows) {
  if (rows.empty()) return std::make_shared<DeferredRows<P>>(Shares<P>(), Targets(rows));
  MPCACHE_ASSIGN_OR_RETURN(Shares<P> masked, StageRows(rows));
  auto out = std::make_shared<DeferredRows<P>>(std::move(masked), Targets(rows));
  ctx.Defer(out);
  return out;
}

template <typename P>
Result<Shares<P>> DeferredRows<P>::Prepare(Context<P>& /*ctx*/) {
  if (sent_) return Shares<P>();
  sent_ = true;
  return std::move(masked_);
}

template <typename P>
Status DeferredRows<P>::Finish(Context<P>& /*ctx*/, std::span<const std::uint64_t> opened) {
  if (done_ || opened.empty()) return Status::Ok();
  done_ = true;
  return FillRows(to_, opened);
}

template <typename P>
Result<Shares<P>> AttentionScores(Context<P>& ctx, const HeadShape& h, const Shares<P>& q,
                                  const std::vector<BlockUse<P>>& keys) {
  MPCACHE_RETURN_IF_ERROR(CheckBlocks(h, keys));
  const std::size_t nh = h.n_heads, hs = h.head_size, kv = h.kv_dim;
  const std::size_t group = nh / (kv / hs), len = TotalRows(keys);
  if (q.size() != nh * hs) {
    return InvalidArgument("attention scores: the query has " + std::to_string(q.size()) +
                           " values, " + ShapeText(h) + " needs " + std::to_string(nh * hs));
  }
  MPCACHE_ASSIGN_OR_RETURN(Opened<P> o, OpenFresh(ctx, MaskSide::kRight, h, q, keys, nh * len));
  MPCACHE_RETURN_IF_ERROR(CheckOpenedRows(h, keys));
  const std::vector<std::uint64_t>& e = o.e;
  Shares<P> z = std::move(o.t.c);
  const Shares<P>& b = o.t.b;
  // z[h, t] += E_h . X_t[kv(h)] + B_h . D_t[kv(h)]  (and the MAC shares alike)
  ParallelFor(ctx.options().threads, nh, [&](std::size_t h0, std::size_t h1) {
    for (std::size_t hd = h0; hd < h1; ++hd) {
      const std::size_t kvo = (hd / group) * hs;
      const std::uint64_t* eh = e.data() + hd * hs;
      std::size_t t0 = 0;
      for (const BlockUse<P>& u : keys) {
        const FixedBlock<P>& blk = *u.block;
        for (std::size_t r = 0; r < u.rows; ++r) {
          const std::size_t row = r * kv + kvo, out = hd * len + t0 + r;
          const std::uint64_t* dr = blk.d.data() + row;
          typename P::Word acc = 0;
          for (std::size_t i = 0; i < hs; ++i) acc += eh[i] * blk.x.v[row + i];
          for (std::size_t i = 0; i < hs; ++i) acc += dr[i] * b.v[hd * hs + i];
          z.v[out] += acc;
          if constexpr (P::kMalicious) {
            u128 mac = 0;
            for (std::size_t i = 0; i < hs; ++i) mac += eh[i] * blk.x.m[row + i];
            for (std::size_t i = 0; i < hs; ++i) mac += dr[i] * b.m[hd * hs + i];
            z.m[out] += mac;
          }
        }
        t0 += u.rows;
      }
    }
  });
  return z;
}

template <typename P>
Result<Shares<P>> AttentionMix(Context<P>& ctx, const HeadShape& h, const Shares<P>& p,
                               const std::vector<BlockUse<P>>& values) {
  MPCACHE_RETURN_IF_ERROR(CheckBlocks(h, values));
  const std::size_t nh = h.n_heads, hs = h.head_size, kv = h.kv_dim;
  const std::size_t group = nh / (kv / hs), len = TotalRows(values);
  if (p.size() != nh * len) {
    return InvalidArgument("attention mix: the weights have " + std::to_string(p.size()) +
                           " values, n_heads x rows = " + std::to_string(nh * len));
  }
  MPCACHE_ASSIGN_OR_RETURN(Opened<P> o, OpenFresh(ctx, MaskSide::kLeft, h, p, values, nh * hs));
  MPCACHE_RETURN_IF_ERROR(CheckOpenedRows(h, values));
  const std::vector<std::uint64_t>& e = o.e;
  Shares<P> z = std::move(o.t.c);
  const Shares<P>& b = o.t.b;
  // z[h, :] += sum_t E[h, t] X_t[kv(h)] + B[h, t] D_t[kv(h)]
  ParallelFor(ctx.options().threads, nh, [&](std::size_t h0, std::size_t h1) {
    for (std::size_t hd = h0; hd < h1; ++hd) {
      const std::size_t kvo = (hd / group) * hs;
      typename P::Word* zv = z.v.data() + hd * hs;
      std::size_t t0 = 0;
      for (const BlockUse<P>& u : values) {
        const FixedBlock<P>& blk = *u.block;
        for (std::size_t r = 0; r < u.rows; ++r) {
          const std::size_t row = r * kv + kvo, w = hd * len + t0 + r;
          const std::uint64_t ew = e[w];
          const typename P::Word bw = b.v[w];
          const std::uint64_t* dr = blk.d.data() + row;
          const typename P::Word* xr = blk.x.v.data() + row;
          for (std::size_t i = 0; i < hs; ++i) zv[i] += ew * xr[i] + dr[i] * bw;
          if constexpr (P::kMalicious) {
            u128* zm = z.m.data() + hd * hs;
            const u128 bm = b.m[w];
            const u128* xm = blk.x.m.data() + row;
            for (std::size_t i = 0; i < hs; ++i) zm[i] += ew * xm[i] + dr[i] * bm;
          }
        }
        t0 += u.rows;
      }
    }
  });
  return z;
}

// P names a type in explicit instantiations: it cannot be parenthesised.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define MPCACHE_INSTANTIATE(P)                                                                  \
  template AttentionShape ShapeOf(MaskSide, const HeadShape&, const std::vector<BlockUse<P>>&); \
  template Status AppendRows(Context<P>&, std::vector<std::pair<FixedBlock<P>*, Shares<P>>>);   \
  template Result<std::shared_ptr<DeferredRows<P>>> DeferRows(                                  \
      Context<P>&, std::vector<std::pair<FixedBlock<P>*, Shares<P>>>);                          \
  template class DeferredRows<P>;                                                               \
  template Result<Shares<P>> AttentionScores(Context<P>&, const HeadShape&, const Shares<P>&,   \
                                             const std::vector<BlockUse<P>>&);                  \
  template Result<Shares<P>> AttentionMix(Context<P>&, const HeadShape&, const Shares<P>&,      \
                                          const std::vector<BlockUse<P>>&);
MPCACHE_INSTANTIATE(SemiHonest)
MPCACHE_INSTANTIATE(Spdz2k)
#undef MPCACHE_INSTANTIATE
// NOLINTEND(bugprone-macro-parentheses)

}  // namespace mpcache::mpc
