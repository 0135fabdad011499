// Every protocol against its plaintext twin, in both security modes, with rounds and bytes
// held to the theory stated in the headers.
#include <gtest/gtest.h>

#include <limits>

#include "common/prg.h"
#include "harness.h"
#include "mpc/beaver.h"
#include "mpc/io.h"
#include "mpc/matmul.h"
#include "mpc/trunc.h"

namespace mpcache::mpc {
namespace {

using testing::ExpectAllOk;
using testing::Harness;
using testing::Share;
using Vec = std::vector<std::uint64_t>;

struct Measured {
  Vec values;
  net::PhaseCounters cost;
};

template <typename P>
class ProtocolTest : public ::testing::Test {};
using Modes = ::testing::Types<SemiHonest, Spdz2k>;
TYPED_TEST_SUITE(ProtocolTest, Modes);

Vec EdgeAndRandom(std::size_t n_random, std::uint64_t seed) {
  Vec v = {0,
           1,
           ~std::uint64_t{0},  // -1
           2,
           std::uint64_t{1} << 62,
           (std::uint64_t{1} << 62) - 1,
           0 - (std::uint64_t{1} << 62),
           static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()),
           static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::min()),
           std::uint64_t{1} << 63 | 1};
  Prg prg(TestSeed(seed));
  for (std::size_t i = 0; i < n_random; ++i) v.push_back(prg.NextU64());
  return v;
}

// Party 0 inputs x; returns shares.
// Open then MAC-check: the value is only trusted after the check.
template <typename P>
Result<Vec> Reveal(Context<P>& ctx, const Shares<P>& x) {
  MPCACHE_ASSIGN_OR_RETURN(Vec v, ctx.Open(x));
  MPCACHE_RETURN_IF_ERROR(ctx.CheckMacs());
  return v;
}

TYPED_TEST(ProtocolTest, InputThenOpenAllToAllAndKing) {
  using P = TypeParam;
  constexpr std::uint64_t B = OpenBytes<P>();  // bytes per opened value
  Harness<P> h(11);
  const Vec x = EdgeAndRandom(100, 1);
  const std::size_t n = x.size();
  auto res = h.Run([&](Context<P>& ctx) -> Result<Measured> {
    ctx.stats().Reset();
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> s, Share(ctx, x));
    const auto in_cost = ctx.stats().Total();
    // Input: 1 round; the owner sends 8n bytes to each peer, the others nothing.
    if (in_cost.rounds != 1) return Internal("input rounds");
    if (in_cost.bytes_sent != (ctx.self() == 0 ? std::size_t{16} * n : 0))
      return Internal("input bytes");
    ctx.stats().Reset();
    MPCACHE_ASSIGN_OR_RETURN(Vec a, ctx.Open(s));
    const auto open_cost = ctx.stats().Total();
    if (open_cost.rounds != 1 || open_cost.bytes_sent != 2 * B * n) return Internal("open cost");
    ctx.stats().Reset();
    MPCACHE_ASSIGN_OR_RETURN(Vec b, ctx.Open(s, OpenMode::kKing, 2));
    const auto king_cost = ctx.stats().Total();
    if (king_cost.rounds != 2 || king_cost.bytes_sent != (ctx.self() == 2 ? 2 * B * n : B * n)) {
      return Internal("king open cost");
    }
    if (a != b) return Internal("king and all-to-all openings differ");
    ctx.stats().Reset();
    MPCACHE_RETURN_IF_ERROR(ctx.CheckMacs());
    return Measured{a, ctx.stats().Total()};
  });
  ASSERT_NO_FATAL_FAILURE(ExpectAllOk(res));
  for (auto& r : res) {
    EXPECT_EQ(r->values, x);
    if (P::kMalicious) {
      EXPECT_EQ(r->cost.rounds, kMacCheckRounds);
      EXPECT_EQ(r->cost.bytes_sent, kArithCheckBytes);
    } else {
      EXPECT_EQ(r->cost.rounds, 0u);
      EXPECT_EQ(r->cost.bytes_sent, 0u);
    }
  }
}

TYPED_TEST(ProtocolTest, LinearOpsMatchPlaintext) {
  using P = TypeParam;
  Harness<P> h(12);
  const Vec x = EdgeAndRandom(50, 2), y = EdgeAndRandom(50, 3);
  auto res = h.Run([&](Context<P>& ctx) -> Result<Vec> {
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> a, Share(ctx, x));
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> b, Share(ctx, y));
    // 3x - y + 7, then negate
    Shares<P> t = MulPublic(a, Vec{3});
    SubInPlace(t, b);
    AddPublicInPlace(ctx.key(), t, Vec{7});
    return Reveal(ctx, Neg(t));
  });
  ASSERT_NO_FATAL_FAILURE(ExpectAllOk(res));
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_EQ(res[1]->at(i), 0 - (3 * x[i] - y[i] + 7));
}

TYPED_TEST(ProtocolTest, MulAndSquareMatchPlaintextInOneRound) {
  using P = TypeParam;
  constexpr std::uint64_t B = OpenBytes<P>();  // bytes per opened value
  Harness<P> h(13);
  const Vec x = EdgeAndRandom(500, 4), y = EdgeAndRandom(500, 5);
  const std::size_t n = x.size();
  auto res = h.Run([&](Context<P>& ctx) -> Result<Measured> {
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> a, Share(ctx, x));
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> b, Share(ctx, y));
    ctx.stats().Reset();
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> z, Mul(ctx, a, b));
    auto cost = ctx.stats().Total();
    // n products: 1 round, 2n elements of 8 bytes to each of 2 peers.
    if (cost.rounds != 1 || cost.bytes_sent != 4 * B * n) return Internal("mul cost");
    ctx.stats().Reset();
    // A batch: two products and a square, still one round; 2n + 2n + n elements per peer.
    BeaverBatch<P> batch(ctx);
    const auto h1 = batch.Prepare(a, b);
    const auto h2 = batch.Prepare(b, b);
    const auto h3 = batch.PrepareSquare(a);
    MPCACHE_RETURN_IF_ERROR(batch.Exchange());
    cost = ctx.stats().Total();
    if (cost.rounds != 1 || cost.bytes_sent != 2 * B * (4 * n + n)) return Internal("batch cost");
    Shares<P> all = batch.Take(h1);
    all.Append(batch.Take(h2));
    all.Append(batch.Take(h3));
    all.Append(z);
    return Measured{Reveal(ctx, all).value(), cost};
  });
  ASSERT_NO_FATAL_FAILURE(ExpectAllOk(res));
  const Vec& v = res[0]->values;
  for (std::size_t i = 0; i < n; ++i) {
    EXPECT_EQ(v[i], x[i] * y[i]);
    EXPECT_EQ(v[n + i], y[i] * y[i]);
    EXPECT_EQ(v[2 * n + i], x[i] * x[i]);
    EXPECT_EQ(v[3 * n + i], x[i] * y[i]);
  }
}

// Batches reuse the words of earlier openings (Context::TakeSpare) and a batch of one job
// writes its products over its own triples: batches that shrink, grow, hold several jobs or
// a lone square, one after the other, each still equal to the plaintext and costing exactly
// its own values (stale words from a longer buffer would go out or come back as values).
TYPED_TEST(ProtocolTest, BatchesOfChangingSizesReuseTheirBuffers) {
  using P = TypeParam;
  constexpr std::uint64_t B = OpenBytes<P>();  // bytes per opened value
  Harness<P> h(23);
  const Vec x = EdgeAndRandom(790, 31), y = EdgeAndRandom(790, 32);
  // (products, square) sizes of each batch: 0 = none.
  const std::vector<std::pair<std::size_t, std::size_t>> plan = {
      {800, 0}, {300, 0}, {0, 200}, {500, 120}, {800, 0}, {0, 800}, {50, 0}};
  auto res = h.Run([&](Context<P>& ctx) -> Result<Vec> {
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> a, Share(ctx, x));
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> b, Share(ctx, y));
    Shares<P> all;
    for (const auto& [np, ns] : plan) {
      const Shares<P> ap = a.Slice(0, np), bp = b.Slice(x.size() - np, np);
      const Shares<P> as = a.Slice(x.size() - ns, ns);
      ctx.stats().Reset();
      BeaverBatch<P> batch(ctx);
      std::size_t hp = 0, hs = 0;
      if (np > 0) hp = batch.Prepare(ap, bp);
      if (ns > 0) hs = batch.PrepareSquare(as);
      MPCACHE_RETURN_IF_ERROR(batch.Exchange());
      const auto cost = ctx.stats().Total();
      if (cost.rounds != 1 || cost.bytes_sent != 2 * B * (2 * np + ns)) {
        return Internal("batch (" + std::to_string(np) + ", " + std::to_string(ns) + ") cost " +
                        std::to_string(cost.bytes_sent) + " bytes");
      }
      if (np > 0) all.Append(batch.Take(hp));
      if (ns > 0) all.Append(batch.Take(hs));
    }
    // The outputs' MACs hold: a product of two of them, then everything opened and checked.
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> zz, Mul(ctx, all.Slice(0, 100), all.Slice(100, 100)));
    all.Append(zz);
    return Reveal(ctx, all);
  });
  ASSERT_NO_FATAL_FAILURE(ExpectAllOk(res));
  const Vec& v = *res[0];
  Vec want;
  for (const auto& [np, ns] : plan) {
    for (std::size_t i = 0; i < np; ++i) want.push_back(x[i] * y[x.size() - np + i]);
    for (std::size_t i = 0; i < ns; ++i)
      want.push_back(x[x.size() - ns + i] * x[x.size() - ns + i]);
  }
  for (std::size_t i = 0; i < 100; ++i) want.push_back(want[i] * want[100 + i]);
  ASSERT_EQ(v.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(v[i], want[i]) << i;
}

TYPED_TEST(ProtocolTest, ProductsAndTruncationThroughAKing) {
  using P = TypeParam;
  constexpr std::uint64_t B = OpenBytes<P>();  // bytes per opened value
  Harness<P> h(19);
  const Vec x = EdgeAndRandom(100, 11), y = EdgeAndRandom(100, 12);
  const std::size_t n = x.size();
  auto res = h.Run([&](Context<P>& ctx) -> Result<Vec> {
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> a, Share(ctx, x));
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> b, Share(ctx, y));
    ctx.stats().Reset();
    BeaverBatch<P> batch(ctx);
    const auto hz = batch.Prepare(a, b);
    MPCACHE_RETURN_IF_ERROR(batch.Exchange(OpenMode::kKing, 1));
    // King: 2 rounds; non-kings send 2n elements to the king, the king 2n to each peer.
    auto c = ctx.stats().Total();
    if (c.rounds != 2 || c.bytes_sent != (ctx.self() == 1 ? 2 * B * 2 * n : B * 2 * n)) {
      return Internal("king product cost");
    }
    Shares<P> z = batch.Take(hz);
    ctx.stats().Reset();
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> t, Trunc(ctx, a, 8, OpenMode::kKing, 2));
    c = ctx.stats().Total();
    if (c.rounds != 2 || c.bytes_sent != (ctx.self() == 2 ? 2 * B * n : B * n)) {
      return Internal("king trunc cost");
    }
    z.Append(t);
    return Reveal(ctx, z);
  });
  ASSERT_NO_FATAL_FAILURE(ExpectAllOk(res));
  for (std::size_t i = 0; i < n; ++i) {
    EXPECT_EQ(res[0]->at(i), x[i] * y[i]);
    if (static_cast<std::int64_t>(x[i]) < (std::int64_t{1} << 62) &&
        static_cast<std::int64_t>(x[i]) > -(std::int64_t{1} << 62)) {
      const std::int64_t want = static_cast<std::int64_t>(x[i]) >> 8;
      const std::int64_t got = static_cast<std::int64_t>(res[0]->at(n + i));
      EXPECT_TRUE(got == want || got == want + 1) << i;
    }
  }
}

TYPED_TEST(ProtocolTest, TruncWithinOneUlp) {
  using P = TypeParam;
  constexpr std::uint64_t B = OpenBytes<P>();  // bytes per opened value
  Harness<P> h(14);
  const std::uint64_t lim = (std::uint64_t{1} << 62) - 1;
  Vec x = {0,     1,           ~std::uint64_t{0}, lim, 0 - lim, 1ull << 16, 0 - (1ull << 16),
           12345, 0 - 12345ull};
  Prg prg(TestSeed(6));
  for (int i = 0; i < 2000; ++i) {
    // Random magnitudes over the whole legal range |x| < 2^62.
    const int bits = static_cast<int>(prg.Uniform(62)) + 1;
    std::uint64_t v = prg.NextU64() >> (64 - bits);
    if (v > lim) v = lim;
    x.push_back(prg.NextU64() & 1 ? v : 0 - v);
  }
  for (int f : {1, 16, 18, 40}) {
    auto res = h.Run([&](Context<P>& ctx) -> Result<Measured> {
      MPCACHE_ASSIGN_OR_RETURN(Shares<P> a, Share(ctx, x));
      ctx.stats().Reset();
      MPCACHE_ASSIGN_OR_RETURN(Shares<P> t, Trunc(ctx, a, f));
      const auto cost = ctx.stats().Total();
      if (cost.rounds != 1 || cost.bytes_sent != 2 * B * x.size()) return Internal("trunc cost");
      return Measured{Reveal(ctx, t).value(), cost};
    });
    ASSERT_NO_FATAL_FAILURE(ExpectAllOk(res));
    for (std::size_t i = 0; i < x.size(); ++i) {
      const std::int64_t want = static_cast<std::int64_t>(x[i]) >> f;
      const std::int64_t got = static_cast<std::int64_t>(res[0]->values[i]);
      EXPECT_TRUE(got == want || got == want + 1)
          << "f=" << f << " x=" << static_cast<std::int64_t>(x[i]) << " got " << got << " want "
          << want;
    }
  }
}

Vec Plain(const Vec& a, const Vec& b, std::size_t m, std::size_t k, std::size_t n) {
  Vec c(m * n, 0);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t t = 0; t < k; ++t)
      for (std::size_t j = 0; j < n; ++j) c[i * n + j] += a[i * k + t] * b[t * n + j];
  return c;
}

TYPED_TEST(ProtocolTest, MatrixProductsMatchPlaintext) {
  using P = TypeParam;
  constexpr std::uint64_t B = OpenBytes<P>();  // bytes per opened value
  Harness<P> h(15);
  const std::size_t m = 3, k = 5, n = 300;  // n >= 256: the column-split kernel
  Prg prg(TestSeed(7));
  auto rnd = [&](std::size_t len) {
    Vec v(len);
    for (auto& e : v) e = prg.NextU64();
    return v;
  };
  const Vec x = rnd(m * k), w = rnd(k * n), x2 = rnd(m * k), y = rnd(k * n), sq = rnd(k * k);
  auto res = h.Run([&](Context<P>& ctx) -> Result<Vec> {
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> sx, Share(ctx, x));
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> sw, Share(ctx, w));
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> sx2, Share(ctx, x2));
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> sy, Share(ctx, y));
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> ssq, Share(ctx, sq));
    ctx.stats().Reset();
    Shares<P> out = MatMulPublicRight(ctx, sx, m, k, w, n);  // x . W(public)
    out.Append(MatMulPublicLeft(ctx, x, m, k, sw, n));       // X(public) . w
    if (ctx.stats().Total().bytes_sent != 0) return Internal("public products must be local");
    // Fixed right operand W (k x n): masked once (1 round, k*n elements to each peer).
    MPCACHE_ASSIGN_OR_RETURN(FixedOperand<P> fw, MaskFixed(ctx, sw, k, n));
    if (ctx.stats().Total().rounds != 1 || ctx.stats().Total().bytes_sent != 2 * B * k * n) {
      return Internal("mask cost");
    }
    for (const Shares<P>* fresh : {&sx, &sx2}) {
      ctx.stats().Reset();
      MPCACHE_ASSIGN_OR_RETURN(Shares<P> z, MatMul(ctx, *fresh, m, fw));
      const auto c = ctx.stats().Total();
      if (c.rounds != 1 || c.bytes_sent != 2 * B * m * k) return Internal("fixed-right cost");
      out.Append(z);
    }
    // Fixed left operand (k x k), fresh right y (k x n).
    MPCACHE_ASSIGN_OR_RETURN(FixedOperand<P> fl, MaskFixed(ctx, ssq, k, k));
    ctx.stats().Reset();
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> zl, MatMul(ctx, fl, sy, n));
    if (ctx.stats().Total().rounds != 1 || ctx.stats().Total().bytes_sent != 2 * B * k * n) {
      return Internal("fixed-left cost");
    }
    out.Append(zl);
    // One-off secret x secret: one round, m*k + k*n elements to each peer.
    ctx.stats().Reset();
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> zo, MatMul(ctx, sx, sy, m, k, n));
    if (ctx.stats().Total().rounds != 1 ||
        ctx.stats().Total().bytes_sent != 2 * B * (m * k + k * n)) {
      return Internal("one-off cost");
    }
    out.Append(zo);
    return Reveal(ctx, out);
  });
  ASSERT_NO_FATAL_FAILURE(ExpectAllOk(res));
  Vec want = Plain(x, w, m, k, n);
  for (const Vec* v : {&x, &x, &x2}) {
    const Vec p = Plain(*v, w, m, k, n);
    want.insert(want.end(), p.begin(), p.end());
  }
  const Vec pl = Plain(sq, y, k, k, n);
  want.insert(want.end(), pl.begin(), pl.end());
  const Vec po = Plain(x, y, m, k, n);
  want.insert(want.end(), po.begin(), po.end());
  EXPECT_EQ(res[2].value(), want);
}

TYPED_TEST(ProtocolTest, MatMulWithWorkerThreads) {
  using P = TypeParam;
  Harness<P> h(16);
  const std::size_t m = 1, k = 64, n = 512;
  Prg prg(TestSeed(8));
  Vec x(m * k), w(k * n);
  for (auto& e : x) e = prg.NextU64();
  for (auto& e : w) e = prg.NextU64();
  auto res = net::RunParties(*h.mesh, [&](net::Channel& ch) -> Result<Vec> {
    MPCACHE_ASSIGN_OR_RETURN(auto ctx, Context<P>::Create(ch, h.dealer->store(ch.self()),
                                                          TestSeed(ch.self()), {.threads = 3}));
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> sx, Share(*ctx, x));
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> sw, Share(*ctx, w));
    MPCACHE_ASSIGN_OR_RETURN(FixedOperand<P> fw, MaskFixed(*ctx, std::move(sw), k, n));
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> z, MatMul(*ctx, sx, m, fw));
    return Reveal(*ctx, z);
  });
  ASSERT_NO_FATAL_FAILURE(ExpectAllOk(res));
  EXPECT_EQ(res[0].value(), Plain(x, w, m, k, n));
}

TYPED_TEST(ProtocolTest, OutputToOnePartyOnly) {
  using P = TypeParam;
  Harness<P> h(17);
  const Vec x = EdgeAndRandom(20, 9);
  auto res = h.Run([&](Context<P>& ctx) -> Result<Measured> {
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> s, Share(ctx, x));
    ctx.stats().Reset();
    MPCACHE_ASSIGN_OR_RETURN(Vec v, OutputTo(ctx, s, 1));
    return Measured{v, ctx.stats().Total()};
  });
  ASSERT_NO_FATAL_FAILURE(ExpectAllOk(res));
  EXPECT_TRUE(res[0]->values.empty());
  EXPECT_TRUE(res[2]->values.empty());
  EXPECT_EQ(res[1]->values, x);
  // Malicious: open x + r (1 round) + MAC check (4); semi-honest: shares to the receiver.
  EXPECT_EQ(res[1]->cost.rounds, P::kMalicious ? 1 + kMacCheckRounds : 1u);
}

TYPED_TEST(ProtocolTest, ClientInputAndOutput) {
  using P = TypeParam;
  Harness<P> h(18);
  const Vec x = EdgeAndRandom(30, 10);
  const std::size_t n = x.size();
  // Offline: the dealer makes client-owned masks for the input and for the output.
  ASSERT_TRUE(
      h.dealer->Provide({.type = preproc::ItemType::kInputMask, .count = n, .owner = kClient})
          .ok());
  ASSERT_TRUE(
      h.dealer->Provide({.type = preproc::ItemType::kInputMask, .count = n, .owner = kClient})
          .ok());
  const Vec r_in = h.dealer->NextClientMasks().value();
  const Vec r_out = h.dealer->NextClientMasks().value();
  Vec d(n);
  for (std::size_t i = 0; i < n; ++i) d[i] = x[i] - r_in[i];  // what the client broadcasts
  auto res = h.Run([&](Context<P>& ctx) -> Result<Vec> {
    MPCACHE_ASSIGN_OR_RETURN(InputMasks<P> masks, ctx.prep().GetInputMasks(n, kClient));
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> s, InputFromClient(ctx, std::move(masks), d));
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> sq, Mul(ctx, s, s));
    return OutputToClient(ctx, sq);
  });
  ASSERT_NO_FATAL_FAILURE(ExpectAllOk(res));
  for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(res[0]->at(i) - r_out[i], x[i] * x[i]);
  EXPECT_EQ(res[0].value(), res[2].value());
}

}  // namespace
}  // namespace mpcache::mpc
