// Openings through a king chosen by the role table (issue 13, mpc/roles.h): arithmetic and
// binary, against the all-to-all opening of the same shares, with rounds and bytes held to
// context.h / binary_context.h; and the lying king: a king that relays a wrong sum (or
// wrong bits) to both peers alike is caught by the MAC check at every party, at every bit
// position tried, since every party logs the value it received and the MACs do not follow.
#include <gtest/gtest.h>

#include <string>

#include "common/prg.h"
#include "harness.h"
#include "mpc/adversary.h"
#include "mpc/compare/binary_context.h"
#include "unit/mpc/lie.h"

namespace mpcache::mpc {
namespace {

using testing::ExpectAllOk;
using testing::Harness;
using testing::Share;
using Vec = std::vector<std::uint64_t>;

template <typename P>
class KingTest : public ::testing::Test {};
using Modes = ::testing::Types<SemiHonest, Spdz2k>;
TYPED_TEST_SUITE(KingTest, Modes);

Vec Random(std::size_t n, std::uint64_t seed) {
  return testing::RandomValues(n, seed);
}

// Every party's table: king `king` for every unit (kNoKing: the static table).
template <typename P>
Status KingEverywhere(Context<P>& ctx, PartyId king) {
  Roles r = RoleTable::StaticRoles(ctx.num_parties());
  r.king = king;
  return ctx.roles().Fill(r);
}

TYPED_TEST(KingTest, TheTablesKingOpensArithmeticValues) {
  using P = TypeParam;
  constexpr std::uint64_t B = OpenBytes<P>();
  const Vec x = Random(77, 3);
  for (PartyId king = 0; king < 3; ++king) {
    Harness<P> h(30 + static_cast<std::uint64_t>(king));
    auto res = h.Run([&](Context<P>& ctx) -> Result<Vec> {
      MPCACHE_ASSIGN_OR_RETURN(Shares<P> s, Share(ctx, x));
      MPCACHE_ASSIGN_OR_RETURN(Vec all, ctx.Open(s));  // static table: all-to-all
      MPCACHE_RETURN_IF_ERROR(KingEverywhere(ctx, king));
      ctx.stats().Reset();
      MPCACHE_ASSIGN_OR_RETURN(Vec through, ctx.Open(s));  // kByRole: the table's king
      const auto cost = ctx.stats().Total();
      const std::uint64_t want = (ctx.self() == king ? 2 : 1) * B * x.size();
      if (cost.rounds != 2 || cost.bytes_sent != want) {
        return Internal("party " + std::to_string(ctx.self()) + ": king opening cost " +
                        std::to_string(cost.rounds) + " rounds, " +
                        std::to_string(cost.bytes_sent) + " bytes; want 2, " +
                        std::to_string(want));
      }
      if (all != through) return Internal("the king's opening differs from all-to-all");
      // The table also counted the unit's demand (this party's share bytes).
      const auto demand = ctx.roles().demand();
      if (demand.empty() || demand.begin()->second.openings != 2) {
        return Internal("the role table did not count the openings");
      }
      MPCACHE_RETURN_IF_ERROR(ctx.CheckMacs());
      return through;
    });
    ASSERT_NO_FATAL_FAILURE(ExpectAllOk(res));
    for (const auto& r : res) EXPECT_EQ(r.value(), x) << "king " << king;
  }
}

TYPED_TEST(KingTest, TheTablesKingOpensBits) {
  using P = TypeParam;
  Harness<P> h(41);
  auto res = h.parties->Run([&](BinaryContext<P>& bc) -> Result<std::vector<PublicBits>> {
    // Two vectors of odd sizes (packed back to back, across word boundaries).
    MPCACHE_ASSIGN_OR_RETURN(BitTriples<P> t, bc.prep().GetBitTriples(200));
    std::vector<BitShares<P>> xs{t.a, t.b};
    xs[0].n = 131;  // the first 131 bits of a
    if constexpr (P::kMalicious) {
      xs[0].v.resize(131);
      xs[0].m.resize(131);
    } else {
      xs[0].v.resize(WordsFor(131));
      xs[0].v.back() &= (std::uint64_t{1} << (131 % 64)) - 1;
    }
    std::vector<BitShares<P>> copy = xs;
    MPCACHE_ASSIGN_OR_RETURN(auto all, bc.OpenMany(std::move(copy)));
    MPCACHE_RETURN_IF_ERROR(KingEverywhere(bc.arith(), 1));
    bc.arith().stats().Reset();
    MPCACHE_ASSIGN_OR_RETURN(auto through, bc.OpenMany(std::move(xs)));
    const auto cost = bc.arith().stats().Total();
    const std::uint64_t bytes = (131 + 200 + 7) / 8;
    if (cost.rounds != 2 || cost.bytes_sent != (bc.self() == 1 ? 2 : 1) * bytes) {
      return Internal("binary king opening cost " + std::to_string(cost.rounds) + " rounds, " +
                      std::to_string(cost.bytes_sent) + " bytes");
    }
    for (std::size_t k = 0; k < all.size(); ++k) {
      if (all[k].n != through[k].n || all[k].w != through[k].w) {
        return Internal("the king's bits differ from all-to-all in vector " + std::to_string(k));
      }
    }
    MPCACHE_RETURN_IF_ERROR(CheckAllMacs(bc));
    return through;
  });
  ASSERT_NO_FATAL_FAILURE(ExpectAllOk(res));
  EXPECT_EQ(res[0].value()[0].w, res[2].value()[0].w);
}

// The king relays opening `target` with 2^bit added to value `elem` (arithmetic) or bit
// `elem` flipped (binary): the same bytes to both peers, and it keeps the lie as its view.
class LyingKing final : public Adversary {
 public:
  LyingKing(Domain domain, std::uint64_t target, std::size_t elem, int bit)
      : domain_(domain), target_(target), elem_(elem), bit_(bit) {}
  void OnOpen(Domain d, std::uint64_t index, std::size_t n, std::span<std::uint8_t> out) override {
    if (d != domain_ || index != target_ || elem_ >= n) return;
    if (d == Domain::kArith) {
      const std::size_t width = out.size() / n;
      AddPowerOfTwo(out.subspan(elem_ * width, width), bit_);
    } else {
      out[elem_ / 8] ^= static_cast<std::uint8_t>(1u << (elem_ % 8));
    }
    ++lies;
  }
  int lies = 0;

 private:
  Domain domain_;
  std::uint64_t target_;
  std::size_t elem_;
  int bit_;
};

TEST(KingAttack, AKingRelayingAWrongSumIsCaughtAtEveryBit) {
  using P = Spdz2k;
  const Vec x = Random(16, 5);
  std::string passed;
  for (int bit : {0, 1, 17, 31, 32, 48, 62, 63}) {
    for (int trial = 0; trial < 4; ++trial) {
      Harness<P> h(500 + 10 * static_cast<std::uint64_t>(bit) + static_cast<std::uint64_t>(trial));
      LyingKing liar(Domain::kArith, 1, 3, bit);  // opening #1: the king's
      auto res = h.Run([&](Context<P>& ctx) -> Result<Vec> {
        MPCACHE_ASSIGN_OR_RETURN(Shares<P> s, Share(ctx, x));
        MPCACHE_ASSIGN_OR_RETURN(Vec before, ctx.Open(s));  // opening #0, honest
        (void)before;
        MPCACHE_RETURN_IF_ERROR(KingEverywhere(ctx, 2));
        if (ctx.self() == 2) ctx.set_adversary_for_testing(&liar);
        MPCACHE_ASSIGN_OR_RETURN(Vec opened, ctx.Open(s));
        MPCACHE_RETURN_IF_ERROR(ctx.CheckMacs());
        return opened;
      });
      ASSERT_EQ(liar.lies, 1) << "the lie was not told";
      for (std::size_t p = 0; p < res.size(); ++p) {
        if (res[p].ok()) {
          passed += " bit " + std::to_string(bit) + " trial " + std::to_string(trial) + " party " +
                    std::to_string(p) + ";";
        } else {
          EXPECT_EQ(res[p].error().code(), ErrorCode::kMacCheckFailed) << res[p].error().ToString();
        }
      }
    }
  }
  EXPECT_TRUE(passed.empty()) << "a lying king passed the MAC check at" << passed;
}

TEST(KingAttack, AKingRelayingWrongBitsIsCaught) {
  using P = Spdz2k;
  for (std::size_t elem : {std::size_t{0}, std::size_t{63}, std::size_t{64}, std::size_t{99}}) {
    Harness<P> h(600 + elem);
    LyingKing liar(Domain::kBinary, 0, elem, 0);
    auto res = h.parties->Run([&](BinaryContext<P>& bc) -> Result<PublicBits> {
      MPCACHE_ASSIGN_OR_RETURN(BitTriples<P> t, bc.prep().GetBitTriples(100));
      MPCACHE_RETURN_IF_ERROR(KingEverywhere(bc.arith(), 0));
      if (bc.self() == 0) bc.set_adversary_for_testing(&liar);
      MPCACHE_ASSIGN_OR_RETURN(PublicBits a, bc.Open(std::move(t.a)));
      MPCACHE_RETURN_IF_ERROR(CheckAllMacs(bc));
      return a;
    });
    ASSERT_EQ(liar.lies, 1);
    for (std::size_t p = 0; p < res.size(); ++p) {
      ASSERT_FALSE(res[p].ok()) << "bit " << elem << ": party " << p << " accepted the lie";
      EXPECT_EQ(res[p].error().code(), ErrorCode::kMacCheckFailed) << res[p].error().ToString();
    }
  }
}

}  // namespace
}  // namespace mpcache::mpc
