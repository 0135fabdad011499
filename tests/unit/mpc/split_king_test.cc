// Split-king openings (mpc/context.h, OpenMode::kSplitKing): every party the king of a third
// of each arithmetic opening, rotating. Against all-to-all: the same opened values, 2 rounds,
// and per party exactly SplitKingBytes (4/3 x B n for n a multiple of 3, against 2 B n) —
// chosen by ContextOptions::open_style or by the role table (kSplitKing) — and the cost the
// context predicts (NextOpenCost). The attacker: a king that relays a wrong sum to ONE peer
// (the honest parties then disagree), to both while keeping the true sum itself, or to both
// keeping the lie, at every value bit; and a non-king that lies in the share it sends a
// king. The MAC check catches each at every party.
#include <gtest/gtest.h>

#include <string>

#include "common/prg.h"
#include "harness.h"
#include "mpc/adversary.h"
#include "unit/mpc/lie.h"

namespace mpcache::mpc {
namespace {

using testing::ExpectAllOk;
using testing::Share;
using Vec = std::vector<std::uint64_t>;

template <typename P>
class SplitKingTest : public ::testing::Test {};
using Modes = ::testing::Types<SemiHonest, Spdz2k>;
TYPED_TEST_SUITE(SplitKingTest, Modes);

Vec Random(std::size_t n, std::uint64_t seed) {
  return testing::RandomValues(n, seed);
}

// Three parties whose contexts open split among kings by their options (not the table).
template <typename P>
std::unique_ptr<preproc::LocalParties<P>> SplitParties(std::uint64_t seed) {
  preproc::LocalPartiesOptions o;
  o.dealer_seed = TestSeed(seed);
  o.bit_seed = TestSeed(seed + 7777);
  o.local_seed = TestSeed(seed + 1000);
  o.recv_timeout = std::chrono::seconds(20);
  o.open_style = OpenStyle::kSplitKing;
  return preproc::LocalParties<P>::Create(o).value();
}

// The one rule for which opening a role's king means (FlushDeferred, kByRole, NextOpenCost).
TEST(SplitSegments, ARoleKingAndTheSessionStyleChooseTheMode) {
  for (const OpenStyle style : {OpenStyle::kAllToAll, OpenStyle::kSplitKing}) {
    EXPECT_EQ(ModeForKing(kSplitKing, style), OpenMode::kSplitKing);
    for (PartyId king : {0, 1, 2}) EXPECT_EQ(ModeForKing(king, style), OpenMode::kKing);
  }
  EXPECT_EQ(ModeForKing(kNoKing, OpenStyle::kAllToAll), OpenMode::kAllToAll);
  EXPECT_EQ(ModeForKing(kNoKing, OpenStyle::kSplitKing), OpenMode::kSplitKing);
}

TEST(SplitSegments, PartitionTheValuesAndRotate) {
  for (std::size_t n : {0, 1, 2, 3, 4, 5, 7, 1000, 1001}) {
    for (int rot = 0; rot < 3; ++rot) {
      std::size_t covered = 0;
      std::uint64_t all_bytes = 0;
      for (PartyId k = 0; k < 3; ++k) {
        const auto [b, e] = SplitSegment(n, 3, rot, k);
        EXPECT_LE(b, e);
        covered += e - b;
        all_bytes += SplitKingBytes(n, 14, 3, rot, k);
        // Segment j = (k - rot) mod 3 starts at n j / 3.
        EXPECT_EQ(b, n * static_cast<std::size_t>((k - rot + 3) % 3) / 3);
      }
      EXPECT_EQ(covered, n);
      // Every value crosses 2 links to its king and 2 back: 4 n values in all.
      EXPECT_EQ(all_bytes, 4 * n * 14);
    }
  }
  // n = 3m: every party sends 4m values whatever the rotation; n = 1: the king 2, the others 1.
  EXPECT_EQ(SplitKingBytes(999, 8, 3, 1, 2), 4u * 333 * 8);
  EXPECT_EQ(SplitKingBytes(1, 8, 3, 0, 2), 16u);
  EXPECT_EQ(SplitKingBytes(1, 8, 3, 1, 0), 16u);
  EXPECT_EQ(SplitKingBytes(1, 8, 3, 1, 2), 8u);
}

TYPED_TEST(SplitKingTest, OpensWhatAllToAllOpensForAThirdFewerBytes) {
  using P = TypeParam;
  constexpr std::uint64_t B = OpenBytes<P>();
  for (std::size_t n : {1, 2, 3, 7, 300, 1001}) {
    const Vec x = Random(n, 40 + n);
    testing::Harness<P> h(70 + n);  // all-to-all by default: the reference
    auto ref = h.Run([&](Context<P>& ctx) -> Result<Vec> {
      MPCACHE_ASSIGN_OR_RETURN(Shares<P> s, Share(ctx, x));
      return ctx.Open(s);
    });
    ASSERT_NO_FATAL_FAILURE(ExpectAllOk(ref));
    auto parties = SplitParties<P>(70 + n);
    auto res = parties->RunArith([&](Context<P>& ctx) -> Result<Vec> {
      MPCACHE_ASSIGN_OR_RETURN(Shares<P> s, Share(ctx, x));
      Vec last;
      std::uint64_t three = 0;
      // Three openings: each party is the king of each segment once.
      for (int k = 0; k < 3; ++k) {
        const auto predicted = ctx.NextOpenCost(n);
        const auto want = SplitKingBytes(n, B, 3, k, ctx.self());
        ctx.stats().Reset();
        MPCACHE_ASSIGN_OR_RETURN(last, ctx.Open(s));
        const auto cost = ctx.stats().Total();
        if (cost.rounds != 2 || cost.bytes_sent != want || predicted.rounds != 2 ||
            predicted.bytes != want) {
          return Internal("party " + std::to_string(ctx.self()) + ", opening " + std::to_string(k) +
                          ": " + std::to_string(cost.rounds) + " rounds, " +
                          std::to_string(cost.bytes_sent) + " bytes (predicted " +
                          std::to_string(predicted.bytes) + "); want 2 and " +
                          std::to_string(want));
        }
        three += cost.bytes_sent;
      }
      // Over the three rotations every party sent 4 n values' bytes (all-to-all: 6 n).
      if (three != 4 * n * B) return Internal("three openings sent " + std::to_string(three));
      MPCACHE_RETURN_IF_ERROR(ctx.CheckMacs());
      return last;
    });
    ASSERT_NO_FATAL_FAILURE(ExpectAllOk(res));
    for (const auto& r : res) EXPECT_EQ(r.value(), x) << "n = " << n;
    EXPECT_EQ(res[0].value(), ref[0].value());
  }
}

TYPED_TEST(SplitKingTest, TheRoleTableCanNameSplitKings) {
  using P = TypeParam;
  constexpr std::uint64_t B = OpenBytes<P>();
  const Vec x = Random(30, 9);
  testing::Harness<P> h(90);
  auto res = h.Run([&](Context<P>& ctx) -> Result<Vec> {
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> s, Share(ctx, x));
    Roles r = RoleTable::StaticRoles(ctx.num_parties());
    r.king = kSplitKing;
    MPCACHE_RETURN_IF_ERROR(ctx.roles().Fill(r));
    ctx.stats().Reset();
    MPCACHE_ASSIGN_OR_RETURN(Vec v, ctx.Open(s));
    const auto cost = ctx.stats().Total();
    if (cost.rounds != 2 || cost.bytes_sent != 40 * B) return Internal("split by table cost");
    MPCACHE_RETURN_IF_ERROR(ctx.CheckMacs());
    return v;
  });
  ASSERT_NO_FATAL_FAILURE(ExpectAllOk(res));
  for (const auto& r : res) EXPECT_EQ(r.value(), x);
}

// The liar (party 1) in opening `target` (the split one), on value `elem` of its own segment
// (relays) or of a peer's segment (shares), adds 2^bit.
enum class Lie {
  kRelayToOne,      // relays the wrong sum to peer 0 only; keeps the true one
  kRelayToBoth,     // relays it to both peers; keeps the true one
  kRelayKeepingIt,  // relays it to both and keeps it as its own view
  kShareToTheKing,  // sends a wrong share to the king of another segment
};

class SplitLiar final : public Adversary {
 public:
  SplitLiar(Lie lie, std::uint64_t target, int bit) : lie_(lie), target_(target), bit_(bit) {}
  void OnOpen(Domain d, std::uint64_t index, std::size_t n, std::span<std::uint8_t> out) override {
    if (d != Domain::kArith || index != target_) return;
    const std::size_t width = out.size() / n;
    ++calls_;
    if (calls_ == 1 && lie_ == Lie::kShareToTheKing) {
      // My share of the first value of party 2's segment (rotation 0: values n 2/3 ..).
      AddPowerOfTwo(out.subspan((2 * n / 3) * width, width), bit_);
      ++lies;
    }
    if (calls_ == 2 && lie_ == Lie::kRelayKeepingIt) {
      AddPowerOfTwo(out.subspan(0, width), bit_);
      ++lies;
    }
  }
  void OnRelay(Domain d, std::uint64_t index, int to, std::size_t n,
               std::span<std::uint8_t> out) override {
    if (d != Domain::kArith || index != target_) return;
    if (lie_ == Lie::kRelayToBoth || (lie_ == Lie::kRelayToOne && to == 0)) {
      AddPowerOfTwo(out.subspan(0, out.size() / n), bit_);
      ++lies;
    }
  }
  int lies = 0;

 private:
  Lie lie_;
  std::uint64_t target_;
  int bit_;
  int calls_ = 0;
};

TEST(SplitKingAttack, EveryLieOfAKingOrAShareIsCaughtAtEveryBit) {
  using P = Spdz2k;
  const Vec x = Random(12, 5);
  std::string passed;
  std::uint64_t seed = 900;
  for (Lie lie :
       {Lie::kRelayToOne, Lie::kRelayToBoth, Lie::kRelayKeepingIt, Lie::kShareToTheKing}) {
    for (int bit : {0, 1, 17, 31, 32, 48, 62, 63}) {
      for (int trial = 0; trial < 2; ++trial) {
        auto parties = SplitParties<P>(++seed);
        SplitLiar liar(lie, 1, bit);  // opening #1 (the first split one): party 1 is the king
                                      // of values 4..7 (rotation 0: segment 1)
        auto res = parties->RunArith([&](Context<P>& ctx) -> Result<Vec> {
          MPCACHE_ASSIGN_OR_RETURN(Shares<P> s, Share(ctx, x));
          MPCACHE_ASSIGN_OR_RETURN(Vec honest, ctx.Open(s, OpenMode::kAllToAll));  // #0
          (void)honest;
          if (ctx.self() == 1) ctx.set_adversary_for_testing(&liar);
          MPCACHE_ASSIGN_OR_RETURN(Vec opened, ctx.Open(s));  // #1, split
          MPCACHE_RETURN_IF_ERROR(ctx.CheckMacs());
          return opened;
        });
        ASSERT_EQ(liar.lies, lie == Lie::kRelayToBoth ? 2 : 1) << "the lie was not told";
        for (std::size_t p = 0; p < res.size(); ++p) {
          if (res[p].ok()) {
            passed += " lie " + std::to_string(static_cast<int>(lie)) + " bit " +
                      std::to_string(bit) + " trial " + std::to_string(trial) + " party " +
                      std::to_string(p) + ";";
          } else {
            EXPECT_EQ(res[p].error().code(), ErrorCode::kMacCheckFailed)
                << res[p].error().ToString();
          }
        }
      }
    }
  }
  EXPECT_TRUE(passed.empty()) << "a split-king lie passed the MAC check at" << passed;
}

}  // namespace
}  // namespace mpcache::mpc
