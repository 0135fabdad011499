// Comparison, bit opening, AND gates and B2A against their plaintext twins in both modes,
// with rounds and bytes held exactly to the theory in the headers.
#include "mpc/compare/compare.h"

#include <gtest/gtest.h>

#include <limits>

#include "cmp_harness.h"
#include "common/fixed_math.h"
#include "common/fixed_point.h"
#include "common/prg.h"

namespace mpcache::mpc {
namespace {

using testing::CmpHarness;
using testing::ExpectAllOk;
using testing::RevealChecked;
using testing::ShareVec;
using testing::Vec;

template <typename P>
class CompareTest : public ::testing::Test {};
using Modes = ::testing::Types<SemiHonest, Spdz2k>;
TYPED_TEST_SUITE(CompareTest, Modes);

Vec EdgeAndRandom(std::size_t n_random, std::uint64_t seed) {
  const std::uint64_t top = std::uint64_t{1} << 63;
  Vec v = {0,
           1,
           ~std::uint64_t{0},
           2,
           top,
           top - 1,
           top + 1,
           top | 0x5555,
           (std::uint64_t{1} << 62),
           0 - (std::uint64_t{1} << 62),
           0x7FFFFFFFFFFFFFFEull,
           0xAAAAAAAAAAAAAAAAull,
           0x5555555555555555ull};
  Prg prg(TestSeed(seed));
  for (std::size_t i = 0; i < n_random; ++i) {
    const std::uint64_t r = prg.NextU64();
    // Mix full-range values with small ones (fixed-point activations).
    v.push_back(i % 2 == 0 ? r : static_cast<std::uint64_t>(static_cast<std::int64_t>(r) >> 40));
  }
  return v;
}

struct Costed {
  Vec values;
  net::PhaseCounters cost;
};

// LessThanZero(x, bits) at three parties: the revealed bits and what the comparison alone
// cost each party (the input and the reveal excluded).
template <typename P>
auto RunCostedLtz(std::uint64_t seed, const Vec& x, int bits) {
  CmpHarness<P> h(seed);
  return h.Run([&](BinaryContext<P>& ctx) -> Result<Costed> {
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> xs, ShareVec(ctx.arith(), x));
    const auto before = ctx.arith().stats().Total();
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> lt, LessThanZero(ctx, xs, bits));
    Costed out;
    out.cost = ctx.arith().stats().Total();
    out.cost.bytes_sent -= before.bytes_sent;
    out.cost.rounds -= before.rounds;
    MPCACHE_ASSIGN_OR_RETURN(out.values, RevealChecked(ctx, lt));
    return out;
  });
}

TYPED_TEST(CompareTest, LessThanZeroMatchesPlaintextWithExactCost) {
  using P = TypeParam;
  for (std::size_t n_random : {0, 1, 51, 52, 500}) {
    const Vec x = EdgeAndRandom(n_random, 11 + n_random);
    auto res = RunCostedLtz<P>(3, x, 64);
    ASSERT_NO_FATAL_FAILURE(ExpectAllOk(res));
    for (std::size_t i = 0; i < x.size(); ++i) {
      const std::uint64_t want = static_cast<std::int64_t>(x[i]) < 0 ? 1 : 0;
      ASSERT_EQ(res[0]->values[i], want) << "x = " << static_cast<std::int64_t>(x[i]);
    }
    for (const auto& r : res) {
      EXPECT_EQ(r->cost.rounds, static_cast<std::uint64_t>(kLtzRounds));
      EXPECT_EQ(r->cost.bytes_sent, 2 * LtzBytesPerPeer(x.size(), 64, OpenBytes<P>()))
          << "n = " << x.size();
    }
  }
}

// Narrower comparisons: exact for |x| < 2^(l-1) (edges included), and in general equal to
// bit l-1 of x (what PlainBackend computes for every input); cost exactly as stated.
TYPED_TEST(CompareTest, NarrowComparisonsMatchTheirTwinWithExactCost) {
  using P = TypeParam;
  for (int bits : {8, 9, 12, 16, 21, 24, 28, 32, 33, 34, 40, 44, 48, 52, 56, 60, 63, 64}) {
    const std::uint64_t half = std::uint64_t{1} << (bits - 1);
    Vec x = {0, 1, ~std::uint64_t{0}, half - 1, 0 - half, half / 2, 0 - half / 2, 2, 0 - 2ull};
    Prg prg(TestSeed(100 + static_cast<std::uint64_t>(bits)));
    for (int i = 0; i < 120; ++i) {
      const std::uint64_t r = prg.NextU64();
      // In range (two's complement l-bit values), and every 8th one anywhere in the ring.
      x.push_back(
          i % 8 == 7 ? r : static_cast<std::uint64_t>(static_cast<std::int64_t>(r) >> (64 - bits)));
    }
    auto res = RunCostedLtz<P>(30 + static_cast<std::uint64_t>(bits), x, bits);
    ASSERT_NO_FATAL_FAILURE(ExpectAllOk(res));
    PlainBackend plain;
    const Vec twin = plain.IsNegative(x, bits);
    for (std::size_t i = 0; i < x.size(); ++i) {
      ASSERT_EQ(res[0]->values[i], twin[i]) << bits << " bits, x = " << x[i];
      if (i % 8 != 7 || i < 9) {  // in range: the true sign
        const std::int64_t v = static_cast<std::int64_t>(x[i]);
        // |v| < 2^(bits-1), written without negating INT64_MIN when bits = 64.
        const bool in_range = bits == 64 || (x[i] + half) < 2 * half;
        if (in_range) {
          ASSERT_EQ(res[0]->values[i], v < 0 ? 1u : 0u) << bits << " bits, x = " << v;
        }
      }
    }
    for (const auto& r : res) {
      EXPECT_EQ(r->cost.rounds, static_cast<std::uint64_t>(LtzRounds(bits))) << bits;
      EXPECT_EQ(r->cost.bytes_sent, 2 * LtzBytesPerPeer(x.size(), bits, OpenBytes<P>(bits)))
          << bits << " bits";
    }
  }
}

TYPED_TEST(CompareTest, ComparisonWidthOutOfRangeIsAnError) {
  using P = TypeParam;
  CmpHarness<P> h(7);
  auto res = h.Run([&](BinaryContext<P>& ctx) -> Result<int> {
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> xs, ShareVec(ctx.arith(), Vec{1, 2}));
    for (int bits : {0, 7, 65}) {
      auto r = LessThanZero(ctx, xs, bits);
      if (r.ok() || r.error().code() != ErrorCode::kInvalidArgument ||
          r.error().message().find("8..64 bits") == std::string::npos) {
        return Internal("bits = " + std::to_string(bits) + " was not refused clearly");
      }
    }
    return 0;
  });
  ASSERT_NO_FATAL_FAILURE(ExpectAllOk(res));
}

TEST(CompareShape, EveryWidthTakesAtMostThreeRounds) {
  // Group nodes, super-nodes (bottom to top), bits per value opened in the combination
  // round and by the fused root.
  EXPECT_EQ(LtzShapeFor(64).groups, 16);
  EXPECT_EQ(LtzShapeFor(64).supers, (std::vector<int>{4, 4, 4, 4}));
  EXPECT_EQ(LtzShapeFor(64).combine_bits, 31);
  EXPECT_EQ(LtzShapeFor(64).root_bits, 7);
  EXPECT_EQ(LtzRounds(64), kLtzRounds);
  EXPECT_EQ(kLtzRounds, 3);
  EXPECT_EQ(LtzShapeFor(40).supers, (std::vector<int>{4, 3, 3}));
  EXPECT_EQ(LtzShapeFor(40).combine_bits, 19);
  EXPECT_EQ(LtzShapeFor(40).root_bits, 5);
  EXPECT_EQ(LtzShapeFor(32).supers, (std::vector<int>{4, 4}));
  EXPECT_EQ(LtzShapeFor(32).combine_bits, 15);
  EXPECT_EQ(LtzShapeFor(32).root_bits, 3);
  // Up to 4 group nodes (l <= 17) the root takes them all: no combination round.
  EXPECT_EQ(LtzShapeFor(8).supers, (std::vector<int>{1, 1}));
  EXPECT_EQ(LtzShapeFor(8).combine_bits, 0);
  EXPECT_EQ(LtzShapeFor(13).supers, (std::vector<int>{1, 1, 1}));
  EXPECT_EQ(LtzShapeFor(17).root_bits, 7);
  for (int bits = kMinCompareBits; bits <= 64; ++bits) {
    EXPECT_EQ(LtzRounds(bits), bits <= 17 ? 2 : 3) << bits;
    const LtzShape s = LtzShapeFor(bits);
    int groups = 0;
    for (int k : s.supers) groups += k;
    EXPECT_EQ(groups, s.groups) << bits;
    EXPECT_EQ(s.groups, (bits - 1 + 3) / 4) << bits;
  }
  EXPECT_EQ(LtzRounds(7), 0);  // out of range: no shape
  // Malicious openings carry the value's bits + 48 (checked modulo that width): whole
  // values 112 bits.
  EXPECT_EQ(OpenBytes<Spdz2k>(32), 10u);
  EXPECT_EQ(OpenBytes<Spdz2k>(40), 11u);
  EXPECT_EQ(OpenBytes<Spdz2k>(64), 14u);
  EXPECT_EQ(OpenBytes<Spdz2k>(63), 14u);
  EXPECT_EQ(OpenBytes<SemiHonest>(64), 8u);
  EXPECT_EQ(OpenBytes<SemiHonest>(32), 4u);
  EXPECT_EQ(OpenBytes<SemiHonest>(40), 5u);
  // 100K comparisons of 32-bit values, malicious: ~2.45 MB per party (10 + 15/8 + 3/8 B to
  // each peer; 2.575 MB with the AND levels).
  EXPECT_EQ(2 * LtzBytesPerPeer(100000, 32, OpenBytes<Spdz2k>(32)), 2450000u);
}

TYPED_TEST(CompareTest, LessThanOnFixedPointRange) {
  using P = TypeParam;
  Prg prg(TestSeed(5));
  Vec a, b;
  for (int i = 0; i < 300; ++i) {
    const double u = (prg.NextDouble() - 0.5) * 400, w = (prg.NextDouble() - 0.5) * 400;
    a.push_back(FixedPoint{18}.Encode(u));
    // Some exact ties and one-LSB gaps.
    b.push_back(i % 7 == 0 ? a.back() : i % 7 == 1 ? a.back() + 1 : FixedPoint{18}.Encode(w));
  }
  CmpHarness<P> h(4);
  auto res = h.Run([&](BinaryContext<P>& ctx) -> Result<Vec> {
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> as, ShareVec(ctx.arith(), a));
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> bs, ShareVec(ctx.arith(), b));
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> lt, LessThan(ctx, as, bs));
    return RevealChecked(ctx, lt);
  });
  ASSERT_NO_FATAL_FAILURE(ExpectAllOk(res));
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(res[0].value()[i],
              static_cast<std::int64_t>(a[i]) < static_cast<std::int64_t>(b[i]) ? 1u : 0u);
  }
}

TYPED_TEST(CompareTest, AndBatchOpenAndBitToArith) {
  using P = TypeParam;
  // Bits are input as arithmetic 0/1 values, converted through LTZ tricks would be circular:
  // instead, x = MSB of shared values gives secret bits whose plaintext we know.
  const Vec xa = EdgeAndRandom(100, 21), ya = EdgeAndRandom(100, 22);
  CmpHarness<P> h(6);
  struct Out {
    PublicBits anded;
    Vec arith;
    std::uint64_t and_bytes = 0, and_rounds = 0;
  };
  auto res = h.Run([&](BinaryContext<P>& ctx) -> Result<Out> {
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> xs, ShareVec(ctx.arith(), xa));
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> ys, ShareVec(ctx.arith(), ya));
    MPCACHE_ASSIGN_OR_RETURN(BitShares<P> bx, MsbBits(ctx, xs));
    MPCACHE_ASSIGN_OR_RETURN(BitShares<P> by, MsbBits(ctx, ys));
    Out out;
    const auto before = ctx.arith().stats().Total();
    BitAndBatch<P> batch(ctx);
    const auto h1 = batch.Prepare(bx, by);
    const auto h2 = batch.Prepare(bx, bx);
    MPCACHE_RETURN_IF_ERROR(batch.Exchange());
    const auto after = ctx.arith().stats().Total();
    out.and_bytes = after.bytes_sent - before.bytes_sent;
    out.and_rounds = after.rounds - before.rounds;
    BitShares<P> z = batch.Take(h1);
    BitShares<P> zz = batch.Take(h2);
    XorInPlace(zz, bx);  // x & x ^ x = 0
    MPCACHE_ASSIGN_OR_RETURN(out.anded, ctx.Open(z));
    MPCACHE_ASSIGN_OR_RETURN(PublicBits zero, ctx.Open(zz));
    for (std::size_t i = 0; i < zero.n; ++i) {
      if (zero.Get(i)) return Internal("x & x != x");
    }
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> za, BitToArith(ctx, std::move(z)));
    MPCACHE_ASSIGN_OR_RETURN(out.arith, RevealChecked(ctx, za));
    return out;
  });
  ASSERT_NO_FATAL_FAILURE(ExpectAllOk(res));
  const std::size_t n = xa.size();
  for (std::size_t i = 0; i < n; ++i) {
    const bool want = static_cast<std::int64_t>(xa[i]) < 0 && static_cast<std::int64_t>(ya[i]) < 0;
    EXPECT_EQ(res[0]->anded.Get(i), want);
    EXPECT_EQ(res[0]->arith[i], want ? 1u : 0u);
  }
  for (const auto& r : res) {
    EXPECT_EQ(r->and_rounds, 1u);
    EXPECT_EQ(r->and_bytes, 2 * ((4 * n + 7) / 8));  // 2 gates x (d, e) bits, 2 peers
  }
}

TYPED_TEST(CompareTest, MacCheckCostAndEmptyCheckIsFree) {
  using P = TypeParam;
  CmpHarness<P> h(8);
  auto res = h.Run([&](BinaryContext<P>& ctx) -> Result<net::PhaseCounters> {
    MPCACHE_RETURN_IF_ERROR(ctx.CheckMacs());  // nothing opened: free
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> xs, ShareVec(ctx.arith(), Vec{5, 0 - 5ull, 7}));
    MPCACHE_ASSIGN_OR_RETURN(BitShares<P> b, MsbBits(ctx, xs));
    const auto before = ctx.arith().stats().Total();
    MPCACHE_RETURN_IF_ERROR(ctx.CheckMacs());
    auto cost = ctx.arith().stats().Total();
    cost.bytes_sent -= before.bytes_sent;
    cost.rounds -= before.rounds;
    MPCACHE_RETURN_IF_ERROR(CheckAllMacs(ctx));
    return cost;
  });
  ASSERT_NO_FATAL_FAILURE(ExpectAllOk(res));
  for (const auto& r : res) {
    EXPECT_EQ(r->rounds, P::kMalicious ? kMacCheckRounds : 0u);
    EXPECT_EQ(r->bytes_sent, P::kMalicious ? kBinaryCheckBytes : 0u);
  }
}

// CheckAllMacs runs both domains' checks in the same 3 rounds: theory per party
//   both pending:        3 rounds, 2 x (152 binary + 192 arithmetic) = 688 B
//   only binary pending: 3 rounds, 304 B;   only arithmetic pending: 3 rounds, 384 B;
//   nothing pending:     free.   Semi-honest: always free.
TYPED_TEST(CompareTest, CombinedMacCheckSharesItsRounds) {
  using P = TypeParam;
  CmpHarness<P> h(9);
  struct Costs {
    net::PhaseCounters both, binary_only, arith_only, none;
  };
  auto res = h.Run([&](BinaryContext<P>& ctx) -> Result<Costs> {
    auto measure = [&](net::PhaseCounters& out) -> Status {
      const auto before = ctx.arith().stats().Total();
      MPCACHE_RETURN_IF_ERROR(CheckAllMacs(ctx));
      out = ctx.arith().stats().Total();
      out.bytes_sent -= before.bytes_sent;
      out.rounds -= before.rounds;
      return Status::Ok();
    };
    Costs c;
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> xs, ShareVec(ctx.arith(), Vec{5, 0 - 5ull, 7}));
    MPCACHE_RETURN_IF_ERROR(ctx.arith().CheckMacs());
    // Both domains: LessThanZero opens arithmetic c = x + r and binary masked bits.
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> lt, LessThanZero(ctx, xs));
    if (ctx.pending_checks() == 0 && P::kMalicious) return Internal("no binary openings");
    if (ctx.arith().pending_checks() == 0 && P::kMalicious) return Internal("no arith openings");
    MPCACHE_RETURN_IF_ERROR(measure(c.both));
    if (ctx.pending_checks() != 0 || ctx.arith().pending_checks() != 0) {
      return Internal("a domain was left unchecked");
    }
    MPCACHE_ASSIGN_OR_RETURN(BitShares<P> b, MsbBits(ctx, xs));  // opens c: arith too
    MPCACHE_RETURN_IF_ERROR(ctx.arith().CheckMacs());
    MPCACHE_ASSIGN_OR_RETURN(PublicBits pb, ctx.Open(std::move(b)));
    (void)pb;
    MPCACHE_RETURN_IF_ERROR(measure(c.binary_only));
    MPCACHE_ASSIGN_OR_RETURN(Vec v, ctx.arith().Open(lt));
    (void)v;
    MPCACHE_RETURN_IF_ERROR(measure(c.arith_only));
    MPCACHE_RETURN_IF_ERROR(measure(c.none));
    return c;
  });
  ASSERT_NO_FATAL_FAILURE(ExpectAllOk(res));
  const bool m = P::kMalicious;
  for (const auto& r : res) {
    EXPECT_EQ(r->both.rounds, m ? kMacCheckRounds : 0u);
    EXPECT_EQ(r->both.bytes_sent, m ? 684u : 0u);
    EXPECT_EQ(r->binary_only.rounds, m ? kMacCheckRounds : 0u);
    EXPECT_EQ(r->binary_only.bytes_sent, m ? 304u : 0u);
    EXPECT_EQ(r->arith_only.rounds, m ? kMacCheckRounds : 0u);
    EXPECT_EQ(r->arith_only.bytes_sent, m ? 380u : 0u);
    EXPECT_EQ(r->none.rounds, 0u);
    EXPECT_EQ(r->none.bytes_sent, 0u);
  }
}

TEST(BitDealer, ItemsAreConsistentAndHandedOutOnce) {
  auto d = preproc::InProcessBitDealer<Spdz2k>::Create(TestSeed(1), 12345).value();
  ASSERT_TRUE(d->Provide(preproc::BitItem::kEdaBit, 10).ok());
  std::vector<EdaBits<Spdz2k>> parts;
  for (int p = 0; p < 3; ++p) parts.push_back(d->store(p).GetEdaBits(10).value());
  const std::uint64_t beta = d->mac_key();
  EXPECT_NE(beta, 0u);
  std::uint64_t high_or = 0;
  for (std::size_t i = 0; i < 10; ++i) {
    u128 r = 0, rm = 0;
    std::uint64_t bits = 0;
    for (int p = 0; p < 3; ++p) {
      r += parts[p].r.v[i];
      rm += parts[p].r.m[i];
    }
    for (std::size_t j = 0; j < 64; ++j) {
      std::uint64_t bit = 0, mac = 0;  // XOR shares; MACs in GF(2^64): beta * bit
      for (int p = 0; p < 3; ++p) {
        const std::uint64_t* row = parts[p].rows.rows[i];  // item-major rows (malicious)
        bit ^= row[edabit::BitWord(static_cast<int>(j))] & 1;
        mac ^= row[edabit::MacOf(edabit::BitWord(static_cast<int>(j)))];
      }
      EXPECT_EQ(mac, bit != 0 ? beta : 0u);
      bits |= bit << j;
    }
    EXPECT_EQ(static_cast<std::uint64_t>(r), bits);
    EXPECT_EQ(rm, u128{12345} * r);
    high_or |= static_cast<std::uint64_t>(r >> 64);  // uniform upper half (opened at full width)
  }
  EXPECT_NE(high_or, 0u);
  // The next request gets fresh items (on demand), never the same ones.
  auto again = d->store(0).GetEdaBits(10).value();
  EXPECT_NE(again.r.v[0], parts[0].r.v[0]);
  EXPECT_EQ(d->store(0).consumed(preproc::BitItem::kEdaBit), 20u);
  EXPECT_GT(d->stats().correction_bytes, 0u);
}

TEST(BitDealer, SemiHonestEdaBitsAndProductsAreConsistent) {
  auto d = preproc::InProcessBitDealer<SemiHonest>::Create(TestSeed(2), 0).value();
  const std::size_t n = 70;  // two units of 64, the second one partly used
  std::vector<EdaBits<SemiHonest>> parts;
  for (int p = 0; p < 3; ++p) parts.push_back(d->store(p).GetEdaBits(n).value());
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t r = 0, bits = 0;
    for (int p = 0; p < 3; ++p) r += parts[p].r.v[i];
    auto bit = [&](const BitShares<SemiHonest>& (*get)(const EdaBits<SemiHonest>&, std::size_t),
                   std::size_t j) {
      std::uint64_t b = 0;
      for (int p = 0; p < 3; ++p) b ^= (get(parts[p], j).v[i / 64] >> (i % 64)) & 1;
      return b;
    };
    auto get_bit = +[](const EdaBits<SemiHonest>& e,
                       std::size_t j) -> const BitShares<SemiHonest>& { return e.bits[j]; };
    auto get_prod = +[](const EdaBits<SemiHonest>& e,
                        std::size_t k) -> const BitShares<SemiHonest>& { return e.prods[k]; };
    for (std::size_t j = 0; j < 64; ++j) bits |= bit(get_bit, j) << j;
    EXPECT_EQ(r, bits);
    for (int g = 0; g < edabit::kGroups; ++g) {
      for (unsigned mask = 0; mask < (1u << edabit::GroupSize(g)); ++mask) {
        const int idx = edabit::MaskIndex(mask);
        if (idx < 0) continue;
        const std::uint64_t sub = (r >> edabit::GroupBase(g)) & mask;
        EXPECT_EQ(bit(get_prod, static_cast<std::size_t>(edabit::GroupOffset(g) + idx)),
                  sub == mask ? 1u : 0u);
      }
    }
  }
}

TEST(BitShare, Transpose64) {
  Prg prg(TestSeed(3));
  std::array<std::uint64_t, 64> a{}, t{};
  for (auto& x : a) x = prg.NextU64();
  t = a;
  Transpose64(t.data());
  for (std::size_t i = 0; i < 64; ++i) {
    for (std::size_t j = 0; j < 64; ++j) EXPECT_EQ((t[j] >> i) & 1, (a[i] >> j) & 1);
  }
}

}  // namespace
}  // namespace mpcache::mpc
