// The attention products against a KV cache in fixed-mask blocks (mpc/attention_product.h)
// against their plaintext twin (exact, mod 2^64), in both modes, with rounds and bytes held
// to the header's theory: appending opens each row once; scores open the query once (dim
// values, whatever the number of cached rows); mix opens the weights once (n_heads x L).
#include "mpc/attention_product.h"

#include <gtest/gtest.h>

#include "common/prg.h"
#include "harness.h"

namespace mpcache::mpc {
namespace {

using testing::ExpectAllOk;
using testing::Harness;
using testing::Share;
using Vec = std::vector<std::uint64_t>;

template <typename P>
class AttentionProductTest : public ::testing::Test {};
using Modes = ::testing::Types<SemiHonest, Spdz2k>;
TYPED_TEST_SUITE(AttentionProductTest, Modes);

Vec Random(std::size_t n, Prg& prg) {
  Vec v(n);
  for (auto& e : v) e = prg.NextU64();
  return v;
}

struct Case {
  HeadShape h;
  std::size_t block = 0;  // rows per block
  std::size_t len = 0;    // cached rows
};

// Plaintext twins: scores[h, t] = q_h . K_t[kv(h)], mix[h, :] = sum_t p[h, t] V_t[kv(h)].
Vec PlainScores(const Case& c, const Vec& q, const Vec& keys) {
  const std::size_t nh = c.h.n_heads, hs = c.h.head_size, kv = c.h.kv_dim;
  const std::size_t group = nh / (kv / hs);
  Vec out(nh * c.len, 0);
  for (std::size_t h = 0; h < nh; ++h) {
    for (std::size_t t = 0; t < c.len; ++t) {
      for (std::size_t i = 0; i < hs; ++i) {
        out[h * c.len + t] += q[h * hs + i] * keys[t * kv + (h / group) * hs + i];
      }
    }
  }
  return out;
}
Vec PlainMix(const Case& c, const Vec& p, const Vec& values) {
  const std::size_t nh = c.h.n_heads, hs = c.h.head_size, kv = c.h.kv_dim;
  const std::size_t group = nh / (kv / hs);
  Vec out(nh * hs, 0);
  for (std::size_t h = 0; h < nh; ++h) {
    for (std::size_t t = 0; t < c.len; ++t) {
      for (std::size_t i = 0; i < hs; ++i) {
        out[h * hs + i] += p[h * c.len + t] * values[t * kv + (h / group) * hs + i];
      }
    }
  }
  return out;
}

// The case's data: keys and values (len x kv_dim), a query (n_heads x head_size) and weights
// (n_heads x len).
struct Data {
  Vec keys, values, q, p;
};
Data RandomData(const Case& c, Prg& prg) {
  const std::size_t nh = c.h.n_heads, hs = c.h.head_size, kv = c.h.kv_dim;
  Data d;
  d.keys = Random(c.len * kv, prg);
  d.values = Random(c.len * kv, prg);
  d.q = Random(nh * hs, prg);
  d.p = Random(nh * c.len, prg);
  return d;
}

// The twins' scores, then their mix.
Vec PlainBoth(const Case& c, const Data& d) {
  Vec want = PlainScores(c, d.q, d.keys);
  const Vec mix = PlainMix(c, d.p, d.values);
  want.insert(want.end(), mix.begin(), mix.end());
  return want;
}

// Scores then mix opened (after the MAC check in malicious mode).
template <typename P>
Result<Vec> OpenChecked(Context<P>& ctx, Shares<P> scores, const Shares<P>& mix) {
  scores.Append(mix);
  MPCACHE_ASSIGN_OR_RETURN(Vec out, ctx.Open(scores));
  MPCACHE_RETURN_IF_ERROR(ctx.CheckMacs());
  return out;
}

// The data shared (keys, values, query, weights), empty key and value blocks for the case,
// each under its own dealer mask, and the uses of all len rows (pointers into k and v:
// moving the vectors keeps them).
template <typename P>
struct Blocks {
  Shares<P> sk, sv, sq, sp;
  std::vector<FixedBlock<P>> k, v;
  std::vector<BlockUse<P>> ku, vu;
};
template <typename P>
Result<Blocks<P>> MakeBlocks(Context<P>& ctx, const Case& c, const Data& data) {
  const std::size_t kv = c.h.kv_dim, blocks = (c.len + c.block - 1) / c.block;
  Blocks<P> out;
  MPCACHE_ASSIGN_OR_RETURN(out.sk, Share(ctx, data.keys));
  MPCACHE_ASSIGN_OR_RETURN(out.sv, Share(ctx, data.values));
  MPCACHE_ASSIGN_OR_RETURN(out.sq, Share(ctx, data.q));
  MPCACHE_ASSIGN_OR_RETURN(out.sp, Share(ctx, data.p));
  out.k.resize(blocks);
  out.v.resize(blocks);
  for (std::size_t b = 0; b < blocks; ++b) {
    for (auto* list : {&out.k, &out.v}) {
      MPCACHE_ASSIGN_OR_RETURN(MatrixMask<P> m, ctx.prep().GetMatrixMask(c.block, kv));
      (*list)[b] = FixedBlock<P>{m.id, c.block, 0, Shares<P>(c.block * kv), {}, std::move(m.a)};
    }
  }
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::size_t rows = std::min(c.block, c.len - b * c.block);
    out.ku.push_back({&out.k[b], rows});
    out.vu.push_back({&out.v[b], rows});
  }
  return out;
}

TYPED_TEST(AttentionProductTest, ScoresAndMixEqualThePlaintextTwinAndCostTheTheory) {
  using P = TypeParam;
  constexpr std::uint64_t B = OpenBytes<P>();
  // Grouped-query heads (4 heads on 2 kv heads), multi-head (kv = dim), one kv head; the
  // last block partly used, a single row, rows appended one by one and in bulk.
  const Case cases[] = {
      {{4, 3, 6}, 4, 10}, {{2, 5, 10}, 3, 3}, {{3, 2, 2}, 8, 1}, {{4, 3, 6}, 1, 5}};
  for (const Case& c : cases) {
    Harness<P> h(21);
    Prg prg(TestSeed(22));
    const std::size_t nh = c.h.n_heads, hs = c.h.head_size, kv = c.h.kv_dim;
    const Data data = RandomData(c, prg);
    auto res = h.Run([&](Context<P>& ctx) -> Result<Vec> {
      MPCACHE_ASSIGN_OR_RETURN(Blocks<P> bl, MakeBlocks(ctx, c, data));
      // The first row alone, the rest in one call: 1 round each, every row opened once.
      for (std::size_t first = 0, n = 1; first < c.len; first += n, n = c.len - first) {
        std::vector<std::pair<FixedBlock<P>*, Shares<P>>> rows;
        for (std::size_t t = first; t < first + n; ++t) {
          rows.emplace_back(&bl.k[t / c.block], bl.sk.Slice(t * kv, kv));
          rows.emplace_back(&bl.v[t / c.block], bl.sv.Slice(t * kv, kv));
        }
        ctx.stats().Reset();
        MPCACHE_RETURN_IF_ERROR(AppendRows<P>(ctx, std::move(rows)));
        const auto cost = ctx.stats().Total();
        if (cost.rounds != 1 || cost.bytes_sent != 2 * B * 2 * n * kv) {
          return Internal("append cost " + std::to_string(cost.bytes_sent));
        }
      }
      ctx.stats().Reset();
      MPCACHE_ASSIGN_OR_RETURN(Shares<P> s, AttentionScores<P>(ctx, c.h, bl.sq, bl.ku));
      auto cost = ctx.stats().Total();
      if (cost.rounds != 1 || cost.bytes_sent != 2 * B * nh * hs) {
        return Internal("scores cost " + std::to_string(cost.bytes_sent));
      }
      ctx.stats().Reset();
      MPCACHE_ASSIGN_OR_RETURN(Shares<P> o, AttentionMix<P>(ctx, c.h, bl.sp, bl.vu));
      cost = ctx.stats().Total();
      if (cost.rounds != 1 || cost.bytes_sent != 2 * B * nh * c.len) {
        return Internal("mix cost " + std::to_string(cost.bytes_sent));
      }
      return OpenChecked(ctx, std::move(s), o);
    });
    ASSERT_NO_FATAL_FAILURE(ExpectAllOk(res));
    const Vec want = PlainBoth(c, data);
    for (const auto& r : res) EXPECT_EQ(r.value(), want) << c.len << " rows";
  }
}

// A deferred append (the decoder's) costs no round: its D rows ride the next exchange, here
// the scores' own opening (2 x kv_dim more values in it), and the products equal the twin. A
// product over a row whose D never arrived (its source dropped before any exchange) is refused.
TYPED_TEST(AttentionProductTest, DeferredRowsRideTheScoresOpening) {
  using P = TypeParam;
  constexpr std::uint64_t B = OpenBytes<P>();
  const Case c{{4, 3, 6}, 4, 6};
  Harness<P> h(24);
  Prg prg(TestSeed(25));
  const std::size_t nh = c.h.n_heads, hs = c.h.head_size, kv = c.h.kv_dim;
  const Data data = RandomData(c, prg);
  auto res = h.Run([&](Context<P>& ctx) -> Result<Vec> {
    MPCACHE_ASSIGN_OR_RETURN(Blocks<P> bl, MakeBlocks(ctx, c, data));
    // Every row but the last appended at once, then the last one deferred: nothing is sent.
    std::vector<std::pair<FixedBlock<P>*, Shares<P>>> rows;
    for (std::size_t t = 0; t + 1 < c.len; ++t) {
      rows.emplace_back(&bl.k[t / c.block], bl.sk.Slice(t * kv, kv));
      rows.emplace_back(&bl.v[t / c.block], bl.sv.Slice(t * kv, kv));
    }
    MPCACHE_RETURN_IF_ERROR(AppendRows<P>(ctx, std::move(rows)));
    const std::size_t last = c.len - 1;
    {
      // A dropped source: its rows are counted but their D never comes.
      std::vector<BlockUse<P>> dropped_keys = bl.ku;
      FixedBlock<P> copy = bl.k[last / c.block];
      FixedBlock<P> copy_v = copy;
      MPCACHE_ASSIGN_OR_RETURN(auto gone,
                               DeferRows<P>(ctx, {{&copy, bl.sk.Slice(last * kv, kv)},
                                                  {&copy_v, bl.sv.Slice(last * kv, kv)}}));
      gone.reset();
      dropped_keys.back().block = &copy;
      ctx.stats().Reset();
      auto refused = AttentionScores<P>(ctx, c.h, bl.sq, dropped_keys);
      if (refused.ok() || refused.error().message().find("were opened") == std::string::npos) {
        return Internal("scores over a row without D were not refused");
      }
    }
    ctx.stats().Reset();
    MPCACHE_ASSIGN_OR_RETURN(
        auto source, DeferRows<P>(ctx, {{&bl.k[last / c.block], bl.sk.Slice(last * kv, kv)},
                                        {&bl.v[last / c.block], bl.sv.Slice(last * kv, kv)}}));
    auto cost = ctx.stats().Total();
    if (cost.rounds != 0 || cost.bytes_sent != 0 || source->done()) {
      return Internal("a deferred append communicated");
    }
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> s, AttentionScores<P>(ctx, c.h, bl.sq, bl.ku));
    cost = ctx.stats().Total();
    if (!source->done() || cost.rounds != 1 || cost.bytes_sent != 2 * B * (nh * hs + 2 * kv)) {
      return Internal("scores with the deferred rows cost " + std::to_string(cost.bytes_sent) +
                      " bytes in " + std::to_string(cost.rounds) + " rounds");
    }
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> o, AttentionMix<P>(ctx, c.h, bl.sp, bl.vu));
    return OpenChecked(ctx, std::move(s), o);
  });
  ASSERT_NO_FATAL_FAILURE(ExpectAllOk(res));
  const Vec want = PlainBoth(c, data);
  for (const auto& r : res) EXPECT_EQ(r.value(), want);
}

// Bad shapes are refused with the reason, before anything is opened.
TYPED_TEST(AttentionProductTest, BadShapesAreRefused) {
  using P = TypeParam;
  Harness<P> h(23);
  auto res = h.Run([&](Context<P>& ctx) -> Status {
    MPCACHE_ASSIGN_OR_RETURN(MatrixMask<P> m, ctx.prep().GetMatrixMask(2, 4));
    FixedBlock<P> b{m.id, 2, 0, Shares<P>(8), {}, std::move(m.a)};
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> row, Share(ctx, Vec(4, 1)));
    MPCACHE_RETURN_IF_ERROR(AppendRows<P>(ctx, {{&b, row}}));
    const HeadShape good{2, 2, 4};
    const Shares<P> q(4);
    ctx.stats().Reset();
    auto expect = [&](Result<Shares<P>> r, const std::string& what) -> Status {
      if (r.ok() || r.error().code() != ErrorCode::kInvalidArgument ||
          r.error().message().find(what) == std::string::npos) {
        return Internal("expected a refusal naming '" + what + "'");
      }
      return Status::Ok();
    };
    // Two rows used of a block holding one; a query of the wrong size; no block; kv_dim
    // not a multiple of the head size; weights of the wrong size.
    MPCACHE_RETURN_IF_ERROR(expect(AttentionScores<P>(ctx, good, q, {{&b, 2}}), "uses 2 rows"));
    MPCACHE_RETURN_IF_ERROR(
        expect(AttentionScores<P>(ctx, good, Shares<P>(3), {{&b, 1}}), "query"));
    MPCACHE_RETURN_IF_ERROR(expect(AttentionScores<P>(ctx, good, q, {}), "no KV block"));
    MPCACHE_RETURN_IF_ERROR(expect(AttentionScores<P>(ctx, {2, 3, 4}, q, {{&b, 1}}), "head shape"));
    MPCACHE_RETURN_IF_ERROR(expect(AttentionMix<P>(ctx, good, Shares<P>(3), {{&b, 1}}), "weights"));
    if (ctx.stats().Total().bytes_sent != 0) return Internal("a refused product communicated");
    // A full block takes no more rows.
    MPCACHE_RETURN_IF_ERROR(AppendRows<P>(ctx, {{&b, row}}));
    if (AppendRows<P>(ctx, {{&b, row}}).ok()) return Internal("a full block took a row");
    return Status::Ok();
  });
  ASSERT_NO_FATAL_FAILURE(ExpectAllOk(res));
}

}  // namespace
}  // namespace mpcache::mpc
