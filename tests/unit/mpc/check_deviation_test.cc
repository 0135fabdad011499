// A corrupt party that deviates *inside* the MAC check (issue 10 §5): it opens a coin share
// other than the one it committed to, sends another commitment to its check value, opens a
// check value other than the committed one, or claims another digest of the input
// broadcasts. Every honest party must fail the check, naming the party and the reason, in
// both domains (arithmetic: mpc/context.h; binary: mpc/compare/binary_context.h). Deleting
// the corresponding verification in the check makes these tests fail.
#include <gtest/gtest.h>

#include <string>

#include "harness.h"
#include "mpc/adversary.h"
#include "mpc/beaver.h"
#include "mpc/compare/compare.h"
#include "mpc/io.h"
#include "preproc/bit_dealer.h"

namespace mpcache::mpc {
namespace {

using P = Spdz2k;
using testing::Harness;
using Vec = std::vector<std::uint64_t>;

// Flips byte `offset` of this party's round-`round` check message of `domain`.
class CheckLiar final : public Adversary {
 public:
  CheckLiar(Domain d, int round, std::size_t offset) : d_(d), round_(round), offset_(offset) {}
  void OnCheckMessage(Domain d, int round, std::span<std::uint8_t> msg) override {
    if (d != d_ || round != round_ || offset_ >= msg.size()) return;
    msg[offset_] ^= 0x10;
    told = true;
  }
  bool told = false;

 private:
  Domain d_;
  int round_;
  std::size_t offset_;
};

struct Deviation {
  const char* what;
  int round;
  std::size_t offset;
  const char* reason;  // in the honest parties' error
};

// Arithmetic check messages: round 1 = coin share (0..15) | nonce (16..47) | next commitment
// (48..79) | broadcast digest (80..111); round 2 = commitment (0..31); round 3 = check
// value (0..15) | nonce (16..47).
const Deviation kArith[] = {
    {"coin share", 0, 3, "coin share that does not match its commitment"},
    {"coin nonce", 0, 20, "coin share that does not match its commitment"},
    {"broadcast digest", 0, 90, "saw different input broadcasts"},
    {"check-value commitment", 1, 5, "check value that does not match its commitment"},
    {"check value", 2, 7, "check value that does not match its commitment"},
    {"check-value nonce", 2, 30, "check value that does not match its commitment"},
};

// Binary check messages: round 1 = coin share (0..15) | nonce | next commitment (48..79);
// round 2 = commitment; round 3 = check value (0..7) | nonce (8..39).
const Deviation kBinary[] = {
    {"coin share", 0, 9, "coin share that does not match its commitment"},
    {"check-value commitment", 1, 0, "check value that does not match its commitment"},
    {"check value", 2, 2, "check value that does not match its commitment"},
    {"check-value nonce", 2, 12, "check value that does not match its commitment"},
};

void ExpectHonestPartiesBlame(const std::vector<Status>& res, int liar, const Deviation& dv) {
  for (int p = 0; p < 3; ++p) {
    if (p == liar) continue;
    const Status& st = res[static_cast<std::size_t>(p)];
    ASSERT_FALSE(st.ok()) << dv.what << ": honest party " << p << " passed the check";
    EXPECT_EQ(st.error().code(), ErrorCode::kMacCheckFailed) << st.error().ToString();
    EXPECT_NE(st.error().message().find("party " + std::to_string(liar)), std::string::npos)
        << dv.what << ": " << st.error().message();
    EXPECT_NE(st.error().message().find(dv.reason), std::string::npos)
        << dv.what << ": " << st.error().message();
  }
}

TEST(CheckDeviation, ArithmeticCheckRejectsEveryDeviation) {
  const Vec x = {5, 7, 0 - 11ull, 1ull << 40};
  for (const Deviation& dv : kArith) {
    for (int liar = 0; liar < 3; ++liar) {
      SCOPED_TRACE(std::string(dv.what) + " by party " + std::to_string(liar));
      Harness<P> h(600 + static_cast<std::uint64_t>(liar));
      CheckLiar adv(Domain::kArith, dv.round, dv.offset);
      auto res = h.Run([&](Context<P>& ctx) -> Status {
        MPCACHE_ASSIGN_OR_RETURN(Shares<P> s,
                                 Input<P>(ctx, 0,
                                          ctx.self() == 0 ? std::span<const std::uint64_t>(x)
                                                          : std::span<const std::uint64_t>(),
                                          x.size()));
        MPCACHE_ASSIGN_OR_RETURN(Shares<P> z, Mul(ctx, s, s));
        MPCACHE_ASSIGN_OR_RETURN(Vec v, ctx.Open(z));
        (void)v;
        if (ctx.self() == liar) ctx.set_adversary_for_testing(&adv);
        Status st = ctx.CheckMacs();
        if (!st.ok() && ctx.Open(z).ok()) return Internal("opened after a failed check");
        return st;
      });
      ASSERT_TRUE(adv.told);
      ExpectHonestPartiesBlame(res, liar, dv);
    }
  }
}

TEST(CheckDeviation, BinaryCheckRejectsEveryDeviation) {
  for (const Deviation& dv : kBinary) {
    for (int liar = 0; liar < 3; ++liar) {
      SCOPED_TRACE(std::string(dv.what) + " by party " + std::to_string(liar));
      Harness<P> h(700 + static_cast<std::uint64_t>(liar));
      auto bits =
          preproc::InProcessBitDealer<P>::Create(TestSeed(701), h.dealer->dealer().mac_key())
              .value();
      CheckLiar adv(Domain::kBinary, dv.round, dv.offset);
      auto res = h.Run([&](Context<P>& ctx) -> Status {
        MPCACHE_ASSIGN_OR_RETURN(
            auto bctx,
            BinaryContext<P>::Create(ctx, bits->store(ctx.self()),
                                     TestSeed(710 + static_cast<std::uint64_t>(ctx.self()))));
        const Vec x = {5, 0 - 7ull, 9};
        MPCACHE_ASSIGN_OR_RETURN(Shares<P> s,
                                 Input<P>(ctx, 0,
                                          ctx.self() == 0 ? std::span<const std::uint64_t>(x)
                                                          : std::span<const std::uint64_t>(),
                                          x.size()));
        MPCACHE_ASSIGN_OR_RETURN(BitShares<P> msb, MsbBits(*bctx, s));
        MPCACHE_ASSIGN_OR_RETURN(PublicBits open, bctx->Open(std::move(msb)));
        (void)open;
        if (ctx.self() == liar) bctx->set_adversary_for_testing(&adv);
        return CheckAllMacs(*bctx);
      });
      ASSERT_TRUE(adv.told);
      ExpectHonestPartiesBlame(res, liar, dv);
    }
  }
}

}  // namespace
}  // namespace mpcache::mpc
