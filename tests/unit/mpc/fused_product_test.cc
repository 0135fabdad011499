// Fused products and deferred truncations (mpc/fused_product.h, mpc/lazy_shares.h): every
// operand shape in both modes equals its plaintext twin exactly (the product of the
// revealed truncations; each truncation the floor or one more), in ONE round with the
// bytes FusedOpenings says; a pending truncation rides on an unrelated exchange or is
// flushed in one round; and the optimal attacker — a consistent lie on any bit of any value
// these exchanges open — is caught by the MAC check.
#include "mpc/fused_product.h"

#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <string>

#include "common/prg.h"
#include "harness.h"
#include "mpc/adversary.h"
#include "mpc/lazy_shares.h"
#include "unit/mpc/lie.h"

namespace mpcache::mpc {
namespace {

using testing::ExpectAllOk;
using testing::Harness;
using testing::Share;
using Vec = std::vector<std::uint64_t>;

template <typename P>
class FusedTest : public ::testing::Test {};
using Modes = ::testing::Types<SemiHonest, Spdz2k>;
TYPED_TEST_SUITE(FusedTest, Modes);

constexpr std::size_t kN = 40;

// Clear operand data for one side.
struct ClearOperand {
  std::uint8_t comps = 0;
  Vec pub, s, z, coef;
  int bits = 0;
};

ClearOperand MakeOperand(std::uint8_t comps, int bits, std::uint64_t seed) {
  Prg prg(TestSeed(seed));
  ClearOperand o;
  o.comps = comps;
  o.bits = (comps & FusedShape::kT) != 0 ? bits : 0;
  for (std::size_t i = 0; i < kN; ++i) {
    // Signed values well inside |x| < 2^62 (the truncation's domain), mixed signs.
    const auto sv = [&](int width) {
      return static_cast<std::uint64_t>(static_cast<std::int64_t>(prg.NextU64() >> (64 - width)) -
                                        (std::int64_t{1} << (width - 1)));
    };
    o.pub.push_back(i % 3 == 0 ? 0 : sv(20));
    o.s.push_back(sv(30));
    o.z.push_back(sv(50));
    // Coefficients: 1, -1, powers of two, small odd numbers.
    const std::uint64_t kinds[] = {1, ~std::uint64_t{0}, 8, 3, 0 - std::uint64_t{5}};
    o.coef.push_back(kinds[i % 5]);
  }
  return o;
}

template <typename P>
Result<FusedOperand<P>> ShareOperand(Context<P>& ctx, const ClearOperand& c) {
  FusedOperand<P> o;
  o.comps = c.comps;
  o.pub = c.pub;
  if ((c.comps & FusedShape::kS) != 0) {
    MPCACHE_ASSIGN_OR_RETURN(o.s, Share(ctx, c.s));
  }
  if ((c.comps & FusedShape::kT) != 0) {
    MPCACHE_ASSIGN_OR_RETURN(o.z, Share(ctx, c.z));
    o.bits = c.bits;
    o.coef = c.coef;
  }
  return o;
}

std::int64_t Floor(std::uint64_t z, int bits) {
  return static_cast<std::int64_t>(z) >> bits;
}

struct Revealed {
  Vec prod, t[2];
  std::uint64_t rounds = 0, bytes = 0;
};

template <typename P>
std::vector<Result<Revealed>> RunFused(const ClearOperand& l, const ClearOperand* r,
                                       std::uint64_t seed) {
  Harness<P> h(seed);
  return h.Run([&](Context<P>& ctx) -> Result<Revealed> {
    MPCACHE_ASSIGN_OR_RETURN(FusedOperand<P> lo, ShareOperand(ctx, l));
    FusedOperand<P> ro;
    if (r != nullptr) {
      MPCACHE_ASSIGN_OR_RETURN(ro, ShareOperand(ctx, *r));
    }
    const auto before = ctx.stats().Total();
    FusedBatch<P> batch(ctx);
    const std::size_t handle = batch.Add(std::move(lo), std::move(ro));
    MPCACHE_RETURN_IF_ERROR(batch.Exchange());
    const auto after = ctx.stats().Total();
    Revealed out;
    out.rounds = after.rounds - before.rounds;
    out.bytes = after.bytes_sent - before.bytes_sent;
    MPCACHE_ASSIGN_OR_RETURN(out.prod, ctx.Open(batch.TakeProduct(handle)));
    for (int side = 0; side < 2; ++side) {
      Shares<P> t = batch.TakeTrunc(handle, side);
      if (!t.empty()) {
        MPCACHE_ASSIGN_OR_RETURN(out.t[side], ctx.Open(t));
      }
    }
    MPCACHE_RETURN_IF_ERROR(ctx.CheckMacs());
    return out;
  });
}

// The value of one side given its revealed truncation.
std::uint64_t ValueOf(const ClearOperand& o, const Vec& t, std::size_t i) {
  std::uint64_t v = o.pub[i];
  if ((o.comps & FusedShape::kS) != 0) v += o.s[i];
  if ((o.comps & FusedShape::kT) != 0) v += o.coef[i] * t[i];
  return v;
}

template <typename P>
void CheckShape(std::uint8_t left, std::uint8_t right, int lbits, int rbits) {
  const ClearOperand l = MakeOperand(left, lbits, 11 + left);
  const ClearOperand r = MakeOperand(right, rbits, 23 + right);
  const bool square = right == 0;
  auto res = RunFused<P>(l, square ? nullptr : &r, 5 + left + 4 * right);
  ASSERT_NO_FATAL_FAILURE(ExpectAllOk(res));
  const Revealed& o = *res[0];
  const std::string what = "left " + std::to_string(left) + " right " + std::to_string(right);
  FusedShape shape{left, right, static_cast<std::uint8_t>((left & FusedShape::kT) ? lbits : 0),
                   static_cast<std::uint8_t>((right & FusedShape::kT) ? rbits : 0)};
  EXPECT_EQ(o.rounds, 1u) << what;
  EXPECT_EQ(o.bytes, 2 * OpenBytes<P>() * FusedOpenings(shape, kN)) << what;
  for (int side = 0; side < (square ? 1 : 2); ++side) {
    const ClearOperand& c = side == 0 ? l : r;
    if ((c.comps & FusedShape::kT) == 0) {
      EXPECT_TRUE(o.t[side].empty());
      continue;
    }
    ASSERT_EQ(o.t[side].size(), kN);
    for (std::size_t i = 0; i < kN; ++i) {
      const std::int64_t d = static_cast<std::int64_t>(o.t[side][i]) - Floor(c.z[i], c.bits);
      EXPECT_TRUE(d == 0 || d == 1) << what << " side " << side << " i " << i << ": off by " << d;
    }
  }
  for (std::size_t i = 0; i < kN; ++i) {
    const std::uint64_t u = ValueOf(l, o.t[0], i);
    const std::uint64_t v = square ? u : ValueOf(r, o.t[1], i);
    EXPECT_EQ(o.prod[i], u * v) << what << " i " << i;
  }
}

TYPED_TEST(FusedTest, EveryShapeEqualsItsPlaintextTwinInOneRound) {
  using P = TypeParam;
  constexpr std::uint8_t S = FusedShape::kS, T = FusedShape::kT;
  for (std::uint8_t left : {S, T, static_cast<std::uint8_t>(S | T)}) {
    for (std::uint8_t right : {std::uint8_t{0}, S, T, static_cast<std::uint8_t>(S | T)}) {
      CheckShape<P>(left, right, 18, 30);
    }
  }
  CheckShape<P>(T, T, 1, 61);  // the extreme widths
  CheckShape<P>(static_cast<std::uint8_t>(S | T), 0, 61, 0);
}

// A pair: left * right and left2 * right with the right operand's masks shared, so it is
// opened once: both products equal their plaintext twins, one round, FusedOpenings' bytes
// (each operand's parts once), every truncation revealed within its +1.
template <typename P>
void CheckPair(std::uint8_t left, std::uint8_t left2, std::uint8_t right) {
  const ClearOperand l = MakeOperand(left, 18, 31 + left);
  const ClearOperand l2 = MakeOperand(left2, 24, 41 + left2);
  const ClearOperand r = MakeOperand(right, 30, 53 + right);
  Harness<P> h(7 + left + 4 * left2 + 16 * right);
  auto res = h.Run([&](Context<P>& ctx) -> Result<std::vector<Vec>> {
    MPCACHE_ASSIGN_OR_RETURN(FusedOperand<P> lo, ShareOperand(ctx, l));
    MPCACHE_ASSIGN_OR_RETURN(FusedOperand<P> l2o, ShareOperand(ctx, l2));
    MPCACHE_ASSIGN_OR_RETURN(FusedOperand<P> ro, ShareOperand(ctx, r));
    const auto before = ctx.stats().Total();
    FusedBatch<P> batch(ctx);
    const std::size_t handle = batch.AddPair(std::move(lo), std::move(l2o), std::move(ro));
    MPCACHE_RETURN_IF_ERROR(batch.Exchange());
    const auto after = ctx.stats().Total();
    std::vector<Vec> out;
    out.push_back({after.rounds - before.rounds, after.bytes_sent - before.bytes_sent});
    for (int which = 0; which < 2; ++which) {
      MPCACHE_ASSIGN_OR_RETURN(Vec p, ctx.Open(batch.TakeProduct(handle, which)));
      out.push_back(std::move(p));
    }
    for (int side = 0; side < 3; ++side) {
      Shares<P> t = batch.TakeTrunc(handle, side);
      Vec tv;
      if (!t.empty()) {
        MPCACHE_ASSIGN_OR_RETURN(tv, ctx.Open(t));
      }
      out.push_back(std::move(tv));
    }
    MPCACHE_RETURN_IF_ERROR(ctx.CheckMacs());
    return out;
  });
  ASSERT_NO_FATAL_FAILURE(ExpectAllOk(res));
  const std::vector<Vec>& o = *res[0];
  const std::string what = "left " + std::to_string(left) + " left2 " + std::to_string(left2) +
                           " right " + std::to_string(right);
  FusedShape shape;
  shape.left = left;
  shape.right = right;
  shape.left2 = left2;
  EXPECT_EQ(o[0][0], 1u) << what;
  EXPECT_EQ(o[0][1], 2 * OpenBytes<P>() * FusedOpenings(shape, kN)) << what;
  const ClearOperand* sides[3] = {&l, &r, &l2};
  for (int side = 0; side < 3; ++side) {
    const ClearOperand& c = *sides[side];
    const Vec& t = o[static_cast<std::size_t>(3 + side)];
    if ((c.comps & FusedShape::kT) == 0) {
      EXPECT_TRUE(t.empty()) << what;
      continue;
    }
    ASSERT_EQ(t.size(), kN) << what;
    for (std::size_t i = 0; i < kN; ++i) {
      const std::int64_t d = static_cast<std::int64_t>(t[i]) - Floor(c.z[i], c.bits);
      EXPECT_TRUE(d == 0 || d == 1) << what << " side " << side << " i " << i;
    }
  }
  for (std::size_t i = 0; i < kN; ++i) {
    const std::uint64_t u = ValueOf(l, o[3], i), v = ValueOf(r, o[4], i), u2 = ValueOf(l2, o[5], i);
    EXPECT_EQ(o[1][i], u * v) << what << " i " << i;
    EXPECT_EQ(o[2][i], u2 * v) << what << " i " << i;
  }
}

TYPED_TEST(FusedTest, PairsEqualTheirTwinsOpeningTheSharedOperandOnce) {
  using P = TypeParam;
  constexpr std::uint8_t S = FusedShape::kS, T = FusedShape::kT;
  for (std::uint8_t left : {S, T, static_cast<std::uint8_t>(S | T)}) {
    for (std::uint8_t left2 : {S, T, static_cast<std::uint8_t>(S | T)}) {
      for (std::uint8_t right : {S, T, static_cast<std::uint8_t>(S | T)}) {
        CheckPair<P>(left, left2, right);
      }
    }
  }
  // A pair's code round-trips with every width; a pair of a square is not a shape.
  FusedShape s{T, T, 1, 61, T, 61};
  EXPECT_TRUE(s.Valid());
  EXPECT_EQ(FusedShape::FromCode(s.Code()), s);
  EXPECT_FALSE((FusedShape{S, 0, 0, 0, S, 0}).Valid());
  EXPECT_FALSE((FusedShape{S, S, 0, 0, T, 0}).Valid());  // kT without its bits
}

TYPED_TEST(FusedTest, BadShapesAreRefusedNamingThePart) {
  using P = TypeParam;
  Harness<P> h(3);
  auto res = h.Run([&](Context<P>& ctx) -> Status {
    FusedBatch<P> batch(ctx);
    FusedOperand<P> l;
    l.comps = FusedShape::kT;
    l.z = Shares<P>(4);
    l.coef.assign(4, 1);
    l.bits = 62;  // beyond the truncation's 1..61
    FusedOperand<P> r;
    r.comps = FusedShape::kS;
    r.s = Shares<P>(4);
    batch.Add(std::move(l), std::move(r));
    return batch.Exchange();
  });
  // Every party refuses (a party that is still setting up hears its peers abort instead).
  bool named = false;
  for (const auto& r : res) {
    ASSERT_FALSE(r.ok());
    named = named || r.error().message().find("1..61") != std::string::npos;
  }
  EXPECT_TRUE(named) << res[0].error().message();
}

// A pending truncation is opened by the next exchange whatever it is (here a plain Open),
// or by FlushDeferred in one round of its own; a claimed element is left to its consumer.
TYPED_TEST(FusedTest, PendingTruncationRidesOnTheNextExchange) {
  using P = TypeParam;
  const ClearOperand c = MakeOperand(FusedShape::kT, 18, 77);
  Harness<P> h(9);
  auto res = h.Run([&](Context<P>& ctx) -> Result<std::array<Vec, 3>> {
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> z, Share(ctx, c.z));
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> other, Share(ctx, c.s));
    auto pending = std::make_shared<PendingTrunc<P>>(z, 18);
    ctx.Defer(pending);
    pending->Claim(0);  // left to a consumer: the exchange must not open it
    const auto before = ctx.stats().Total();
    MPCACHE_ASSIGN_OR_RETURN(Vec opened_other, ctx.Open(other));
    const auto after = ctx.stats().Total();
    if (after.rounds - before.rounds != 1) return Internal("the ride cost a round");
    if (after.bytes_sent - before.bytes_sent != 2 * OpenBytes<P>() * (2 * kN - 1)) {
      return Internal("the ride sent the wrong number of bytes");
    }
    if (pending->pending() != 1 || pending->done(0)) return Internal("element 0 was opened");
    // The last one in a flush of its own: one round.
    MPCACHE_RETURN_IF_ERROR(ctx.FlushDeferred());  // nothing: element 0 is still claimed
    if (ctx.stats().Total().rounds != after.rounds) return Internal("an empty flush cost a round");
    auto second = std::make_shared<PendingTrunc<P>>(z, 18);
    ctx.Defer(second);
    MPCACHE_RETURN_IF_ERROR(ctx.FlushDeferred());
    if (ctx.stats().Total().rounds != after.rounds + 1) return Internal("a flush is one round");
    std::array<Vec, 3> out;
    out[0] = opened_other;
    Shares<P> firsts = pending->values().Slice(1, kN - 1);
    MPCACHE_ASSIGN_OR_RETURN(out[1], ctx.Open(firsts));
    MPCACHE_ASSIGN_OR_RETURN(out[2], ctx.Open(second->values()));
    MPCACHE_RETURN_IF_ERROR(ctx.CheckMacs());
    return out;
  });
  ASSERT_NO_FATAL_FAILURE(ExpectAllOk(res));
  const auto& o = *res[0];
  EXPECT_EQ(o[0], c.s);
  for (std::size_t i = 1; i < kN; ++i) {
    const std::int64_t d = static_cast<std::int64_t>(o[1][i - 1]) - Floor(c.z[i], 18);
    EXPECT_TRUE(d == 0 || d == 1) << i;
  }
  for (std::size_t i = 0; i < kN; ++i) {
    const std::int64_t d = static_cast<std::int64_t>(o[2][i]) - Floor(c.z[i], 18);
    EXPECT_TRUE(d == 0 || d == 1) << i;
  }
}

// ---- the optimal attacker (malicious mode) --------------------------------------------

// Once armed, adds 2^bit to value `elem` of the `rel`-th arithmetic opening after the arming
// (little-endian, with carry): the same bytes go to both peers, and the liar's own view
// includes the lie.
class ConsistentLiar final : public Adversary {
 public:
  ConsistentLiar(std::uint64_t rel, std::size_t elem, int bit)
      : rel_(rel), elem_(elem), bit_(bit) {}
  void Arm() { armed_ = true; }
  void OnOpen(Domain d, std::uint64_t /*index*/, std::size_t n,
              std::span<std::uint8_t> out) override {
    if (d != Domain::kArith || !armed_) return;
    if (seen_++ != rel_ || elem_ >= n) return;
    const std::size_t width = out.size() / n;
    AddPowerOfTwo(out.subspan(elem_ * width, width), bit_);
    ++lies;
  }
  int lies = 0;

 private:
  std::uint64_t rel_;
  std::size_t elem_;
  int bit_;
  bool armed_ = false;
  std::uint64_t seen_ = 0;
};

// Party 1 lies on value `elem` of the `rel`-th opening of a fused product's exchange (with
// `ride`, a pending truncation rides on it: its values are opening 0, the product's 1).
// With `pair`, the product is a pair (a second left operand [s - a] after the right's values:
// the right operand's opening feeds both products).
bool LieIsCaught(std::uint64_t rel, std::size_t elem, int bit, bool ride, std::uint64_t seed,
                 bool pair = false) {
  using P = Spdz2k;
  constexpr std::uint8_t S = FusedShape::kS, T = FusedShape::kT;
  const ClearOperand l = MakeOperand(static_cast<std::uint8_t>(S | T), 18, seed);
  const ClearOperand r = MakeOperand(T, 24, seed + 1);
  Harness<P> h(seed);
  ConsistentLiar liar(rel, elem, bit);
  auto res = h.Run([&](Context<P>& ctx) -> Status {
    if (ctx.self() == 1) ctx.set_adversary_for_testing(&liar);
    MPCACHE_ASSIGN_OR_RETURN(FusedOperand<P> lo, ShareOperand(ctx, l));
    MPCACHE_ASSIGN_OR_RETURN(FusedOperand<P> ro, ShareOperand(ctx, r));
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> z, Share(ctx, l.z));
    std::shared_ptr<PendingTrunc<P>> pending;
    if (ride) {
      pending = std::make_shared<PendingTrunc<P>>(z, 12);
      ctx.Defer(pending);
    }
    if (ctx.self() == 1) liar.Arm();
    FusedBatch<P> batch(ctx);
    if (pair) {
      MPCACHE_ASSIGN_OR_RETURN(FusedOperand<P> l2o,
                               ShareOperand(ctx, MakeOperand(FusedShape::kS, 0, seed + 2)));
      batch.AddPair(std::move(lo), std::move(l2o), std::move(ro));
    } else {
      batch.Add(std::move(lo), std::move(ro));
    }
    MPCACHE_RETURN_IF_ERROR(batch.Exchange());
    return ctx.CheckMacs();
  });
  bool all_failed = true;
  for (const auto& s : res) all_failed = all_failed && !s.ok();
  return liar.lies > 0 && all_failed;
}

TEST(FusedAttack, ConsistentLiesOnEveryOpenedValueAreCaught) {
  // The fused product opens [s - a | z + 2^62 + r] of the left and [z + 2^62 + r] of the
  // right: 3 kN values. Lie on values of every part, at low, middle and top bits of the
  // value (bit 63 is its top: the lie the old check let through half of the time). Bits
  // 64..127 of a full-width opening are not part of the value (Z_2^64): a lie there changes
  // nothing the parties compute.
  int trial = 0;
  for (std::size_t elem : {std::size_t{0}, kN + 3, 2 * kN + 7}) {
    for (int bit : {0, 1, 17, 40, 61, 62, 63}) {
      EXPECT_TRUE(LieIsCaught(0, elem, bit, false, 100 + trial)) << elem << " bit " << bit;
      ++trial;
    }
  }
  // A pair: the shared right operand's opening (used by both products) and the second left
  // operand's, at every bit of the value.
  for (std::size_t elem : {2 * kN + 1, 3 * kN + 2}) {
    for (int bit : {0, 1, 31, 62, 63}) {
      EXPECT_TRUE(LieIsCaught(0, elem, bit, false, 200 + trial, true)) << elem << " bit " << bit;
      ++trial;
    }
  }
  // A pending truncation riding on the product's exchange: its values are an opening of
  // their own (sent first), the product's come next.
  for (int bit : {0, 40, 62, 63}) {
    EXPECT_TRUE(LieIsCaught(0, 5, bit, true, 300 + trial)) << "riding, bit " << bit;
    EXPECT_TRUE(LieIsCaught(1, kN + 5, bit, true, 400 + trial)) << "product, bit " << bit;
    ++trial;
  }
}

}  // namespace
}  // namespace mpcache::mpc
