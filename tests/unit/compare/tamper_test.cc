// Malicious mode: one flipped bit in one party's comparison material (bit triple, edaBit
// bits, products or arithmetic half, daBit either half, root tuple either half, and every
// part of a comparison tuple: r's bits, the group products, the combination round's masks
// and mask products, the root's masks and arithmetic monomials, [r]; their MACs) or in an
// opened bit on the wire makes the next CheckAllMacs() fail at every party, and nothing is
// opened after. (A consistent lie — the same to both peers — is attack_test.cc.)
//
// Positions: a binary value share is a word whose bit 0 is the share, so value flips are at
// bit 0 (a flip above changes no value: no attack). MAC shares (GF(2^64)): any of bits
// 0..63 (a flip escapes with probability 2^-64). Arithmetic halves (Z_2^128 lifts): value
// bits 0..63, MAC bits 0..63 (as in mpc/tamper).
// The edaBit's (and the tuple's) binary bits and group products enter the comparison with
// coefficients that depend on the opened c, the combination round's mask products and the
// root's arithmetic monomials with coefficients that depend on the opened masked bits, so
// for some inputs a flip of one of them changes nothing anyone computes: then the check
// passes and the result is right (harmless, correctly not an error). What must never happen
// is a wrong result that passes.
#include <gtest/gtest.h>

#include "cmp_harness.h"
#include "common/prg.h"
#include "mpc/compare/compare.h"
#include "mpc/compare/ltz_layout.h"

namespace mpcache::mpc {
namespace {

using P = Spdz2k;
using testing::CmpHarness;
using testing::RevealChecked;
using testing::ShareVec;
using testing::Vec;
constexpr int kTrials = 12;

enum class Field {
  kTripleA,
  kTripleB,
  kTripleC,
  kEdaBit,
  kEdaProd,
  kEdaR,
  kDaBin,
  kDaArith,
  kRootBin,
  kRootArith,
  // Comparison tuples (LessThanZero).
  kLtzBit,        // r's bits
  kLtzGroupProd,  // the group products
  kLtzMask,       // the combination round's masks
  kLtzMaskProd,   // their products
  kLtzRootMask,   // the root's masks
  kLtzRootMono,   // the root's arithmetic monomials
  kLtzR           // [r]
};

class TamperBitPrep final : public BitPreprocessing<P> {
 public:
  TamperBitPrep(BitPreprocessing<P>& inner, Field f, bool mac, std::size_t index,
                std::size_t bitpos, int bit)
      : inner_(inner), f_(f), mac_(mac), index_(index), bitpos_(bitpos), bit_(bit) {}
  PartyId party() const override { return inner_.party(); }
  std::uint64_t bit_mac_key_share() const override { return inner_.bit_mac_key_share(); }
  Result<BitTriples<P>> GetBitTriples(std::size_t n) override {
    MPCACHE_ASSIGN_OR_RETURN(BitTriples<P> t, inner_.GetBitTriples(n));
    if (!done_ && f_ == Field::kTripleA) Flip(t.a);
    if (!done_ && f_ == Field::kTripleB) Flip(t.b);
    if (!done_ && f_ == Field::kTripleC) Flip(t.c);
    return t;
  }
  Result<EdaBits<P>> GetEdaBits(std::size_t n) override {
    MPCACHE_ASSIGN_OR_RETURN(EdaBits<P> e, inner_.GetEdaBits(n));
    if (!done_ && f_ == Field::kEdaBit) FlipRow(e.rows, edabit::BitWord(bitpos_ % 64));
    if (!done_ && f_ == Field::kEdaProd) {
      FlipRow(e.rows, edabit::ProductWord(static_cast<int>(bitpos_ % edabit::kProducts)));
    }
    if (!done_ && f_ == Field::kEdaR) Flip128(e.r);
    return e;
  }
  Result<DaBits<P>> GetDaBits(std::size_t n) override {
    MPCACHE_ASSIGN_OR_RETURN(DaBits<P> d, inner_.GetDaBits(n));
    if (!done_ && f_ == Field::kDaBin) Flip(d.b);
    if (!done_ && f_ == Field::kDaArith) Flip128(d.a);
    return d;
  }
  Result<RootTuples<P>> GetRootTuples(std::size_t n) override {
    MPCACHE_ASSIGN_OR_RETURN(RootTuples<P> t, inner_.GetRootTuples(n));
    BitShares<P>* bins[] = {&t.u, &t.v, &t.w};
    if (!done_ && f_ == Field::kRootBin) Flip(*bins[bitpos_ % 3]);
    if (!done_ && f_ == Field::kRootArith) Flip128(t.mono[bitpos_ % 7]);
    return t;
  }
  Result<BitShares<P>> GetBitRandoms(std::size_t n) override { return inner_.GetBitRandoms(n); }
  Result<LtzTuples<P>> GetLtzTuples(std::size_t n, int groups) override {
    MPCACHE_ASSIGN_OR_RETURN(LtzTuples<P> t, inner_.GetLtzTuples(n, groups));
    if (done_) return t;
    const ltz::LtzLayout& l = ltz::LtzLayoutFor(groups);
    // A binary value of the category (value word: bit 0; or its MAC word).
    auto flip_value = [&](int first, int count) {
      if (count <= 0) return;
      const int v = first + static_cast<int>(bitpos_ % static_cast<std::size_t>(count));
      const std::size_t i = index_ % t.rows.size();
      t.rows.rows[i][mac_ ? l.MacWord(v) : static_cast<std::size_t>(v)] ^= std::uint64_t{1} << bit_;
      done_ = true;
    };
    // An arithmetic word pair (value lo/hi, or its MAC at + 2).
    auto flip_arith = [&](std::size_t word) {
      const std::size_t i = index_ % t.rows.size();
      const std::size_t w = word + (mac_ ? 2 : 0) + (bit_ >= 64 ? 1 : 0);
      t.rows.rows[i][w] ^= std::uint64_t{1} << (bit_ % 64);
      if (word == l.RWord()) {  // [r] is also unpacked into t.r
        (mac_ ? t.r.m[i] : t.r.v[i]) ^= u128{1} << bit_;
      }
      done_ = true;
    };
    int mask_prods = 0;
    for (const ltz::SuperNode& q : l.supers) {
      mask_prods += static_cast<int>(q.monos.size()) - q.vars;
    }
    switch (f_) {
      case Field::kLtzBit:
        flip_value(0, l.r_bits);
        break;
      case Field::kLtzGroupProd:
        flip_value(l.eda_products, l.num_binary - l.eda_products - mask_prods);
        break;
      case Field::kLtzMask:
        flip_value(l.super_fresh, l.combine_bits);
        break;
      case Field::kLtzMaskProd:
        flip_value(l.num_binary - mask_prods, mask_prods);
        break;
      case Field::kLtzRootMask:
        flip_value(l.root_masks, l.root.vars);
        break;
      case Field::kLtzRootMono:
        flip_arith(l.MonoWord(static_cast<int>(bitpos_ % l.root.monos.size())));
        break;
      case Field::kLtzR:
        flip_arith(l.RWord());
        break;
      default:
        break;
    }
    return t;
  }

 private:
  void Flip(BitShares<P>& s) {
    const std::size_t i = index_ % s.n;
    (mac_ ? s.m[i] : s.v[i]) ^= std::uint64_t{1} << bit_;
    done_ = true;
  }
  // An edaBit row's value word (bit 0 is the share) or its MAC word.
  void FlipRow(EdaRows& rows, std::size_t value_word) {
    const std::size_t i = index_ % rows.size();
    rows.rows[i][mac_ ? edabit::MacOf(value_word) : value_word] ^= std::uint64_t{1} << bit_;
    done_ = true;
  }
  void Flip128(Shares<P>& s) {
    const std::size_t i = index_ % s.size();
    (mac_ ? s.m[i] : s.v[i]) ^= u128{1} << bit_;
    done_ = true;
  }
  BitPreprocessing<P>& inner_;
  Field f_;
  bool mac_;
  std::size_t index_, bitpos_;
  int bit_;
  bool done_ = false;
};

// A channel that flips one bit of its `target`-th Send (counted from arming).
class TamperChannel final : public net::Channel {
 public:
  TamperChannel(net::Channel& inner, int target, std::size_t byte, int bit)
      : inner_(inner), target_(target), byte_(byte), bit_(bit) {}
  PartyId self() const override { return inner_.self(); }
  int num_parties() const override { return inner_.num_parties(); }
  Status Flush() override { return inner_.Flush(); }
  void Arm() { armed_ = true; }

 protected:
  Status DoSend(PartyId peer, std::span<const std::uint8_t> data) override {
    if (armed_ && sends_++ == target_) {
      std::vector<std::uint8_t> copy(data.begin(), data.end());
      copy[byte_ % copy.size()] ^= static_cast<std::uint8_t>(1u << bit_);
      return inner_.Send(peer, copy);
    }
    return inner_.Send(peer, data);
  }
  Status DoRecv(PartyId peer, std::span<std::uint8_t> data) override {
    return inner_.Recv(peer, data);
  }

 private:
  net::Channel& inner_;
  int target_;
  std::size_t byte_;
  int bit_;
  bool armed_ = false;
  int sends_ = 0;
};

Vec Inputs() {
  return {5, 0 - 5ull, 1ull << 40, 0 - (1ull << 50), 77, 0};
}

enum class Outcome { kDetected, kHarmless, kAcceptedWrong };

// What LessThanZero(Inputs(), bits) must give: bit bits - 1 of each input.
Vec Want(int bits) {
  Vec out;
  for (std::uint64_t x : Inputs()) out.push_back((x >> (bits - 1)) & 1);
  return out;
}

// One comparison by LessThanZero (`bits` wide) and one by MsbBits + BitToArith (64 bits),
// then a reveal of both. kDetected: every party's check failed and nothing was opened
// after; kHarmless: every check passed and the result is right (the flipped share had a
// zero coefficient for these inputs); kAcceptedWrong: a wrong result passed (a bug).
Outcome Attack(CmpHarness<P>& h, std::vector<BitPreprocessing<P>*> bprep,
               std::vector<net::Channel*> channel = {}, TamperChannel* arm = nullptr,
               int bits = 64) {
  Vec want = Want(bits);
  for (std::uint64_t v : Want(64)) want.push_back(v);
  auto res = h.Run(
      [&](BinaryContext<P>& ctx) -> Result<int> {
        MPCACHE_ASSIGN_OR_RETURN(Shares<P> xs, ShareVec(ctx.arith(), Inputs()));
        MPCACHE_RETURN_IF_ERROR(ctx.arith().CheckMacs());  // inputs are fine
        if (arm != nullptr && ctx.self() == arm->self()) arm->Arm();
        MPCACHE_ASSIGN_OR_RETURN(Shares<P> lt, LessThanZero(ctx, xs, bits));
        MPCACHE_ASSIGN_OR_RETURN(BitShares<P> msb, MsbBits(ctx, xs));
        MPCACHE_ASSIGN_OR_RETURN(Shares<P> lt2, BitToArith(ctx, std::move(msb)));
        lt.Append(lt2);
        auto revealed = RevealChecked(ctx, lt);
        if (revealed.ok()) return revealed.value() == want ? 1 : 2;
        if (revealed.error().code() != ErrorCode::kMacCheckFailed) return revealed.error();
        // Nothing is opened after a failed check, in either domain.
        const bool refused = !ctx.Open(BitShares<P>(3)).ok() || !ctx.arith().Open(xs).ok();
        return refused ? 0 : 3;
      },
      bprep, channel);
  int detected = 0, harmless = 0;
  for (std::size_t i = 0; i < res.size(); ++i) {
    EXPECT_TRUE(res[i].ok()) << "party " << i << ": " << res[i].error().ToString();
    if (!res[i].ok()) return Outcome::kAcceptedWrong;
    EXPECT_NE(res[i].value(), 3) << "party " << i << " opened after a failed check";
    if (res[i].value() == 0) ++detected;
    if (res[i].value() == 1) ++harmless;
  }
  if (detected == 3) return Outcome::kDetected;
  if (harmless == 3) return Outcome::kHarmless;
  return Outcome::kAcceptedWrong;
}

TEST(CompareTamper, HonestRunPasses) {
  CmpHarness<P> h(40);
  auto res = h.Run([&](BinaryContext<P>& ctx) -> Result<Vec> {
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> xs, ShareVec(ctx.arith(), Inputs()));
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> lt, LessThanZero(ctx, xs));
    return RevealChecked(ctx, lt);
  });
  testing::ExpectAllOk(res);
  EXPECT_EQ(res[0].value(), (Vec{0, 1, 0, 1, 0, 0}));
}

// The combined check (both domains in the same rounds) names the binary domain when a
// binary opening was tampered with, and afterwards neither domain opens anything.
TEST(CompareTamper, BinaryFailureInCombinedCheckStopsBothDomains) {
  CmpHarness<P> h(45);
  auto res = h.Run([&](BinaryContext<P>& ctx) -> Result<int> {
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> xs, ShareVec(ctx.arith(), Inputs()));
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> lt, LessThanZero(ctx, xs));
    if (ctx.arith().pending_checks() == 0 || ctx.pending_checks() == 0) {
      return Internal("both domains should have pending openings");
    }
    if (ctx.self() == 1) ctx.log_for_testing().front().macs[0] ^= 1;
    Status st = CheckAllMacs(ctx);
    if (st.ok()) return Internal("tampered binary opening passed");
    if (st.error().code() != ErrorCode::kMacCheckFailed) return st.error();
    if (st.error().message().find("binary domain") == std::string::npos) {
      return Internal("failure does not name the binary domain: " + st.error().message());
    }
    if (!ctx.failed() || !ctx.arith().failed()) return Internal("a context is still live");
    if (ctx.arith().Open(lt).ok() || ctx.Open(BitShares<P>(3)).ok()) {
      return Internal("opened after a failed check");
    }
    return 0;
  });
  for (std::size_t i = 0; i < res.size(); ++i) {
    ASSERT_TRUE(res[i].ok()) << "party " << i << ": " << res[i].error().ToString();
  }
}

TEST(CompareTamper, FlippedComparisonMaterialIsDetected) {
  Prg prg(TestSeed(41));
  // (RootTuples are no longer used by any comparison: LessThanZero takes comparison
  // tuples, MsbBits edaBits, bit triples and, converted, daBits.)
  const Field fields[] = {Field::kTripleA,      Field::kTripleB,     Field::kTripleC,
                          Field::kEdaBit,       Field::kEdaProd,     Field::kEdaR,
                          Field::kDaBin,        Field::kDaArith,     Field::kLtzBit,
                          Field::kLtzGroupProd, Field::kLtzMask,     Field::kLtzMaskProd,
                          Field::kLtzRootMask,  Field::kLtzRootMono, Field::kLtzR};
  for (Field f : fields) {
    // The edaBit's and the tuple's binary bits and products, the combination round's mask
    // products and the root's arithmetic monomials enter the comparison with coefficients
    // that depend on opened values: for some inputs a flip changes nothing (harmless).
    // Every other item always matters: the masks and the triples' parts are in an opened
    // value with coefficient 1, [r] in the opened c.
    const bool may_vanish = f == Field::kEdaBit || f == Field::kEdaProd || f == Field::kLtzBit ||
                            f == Field::kLtzGroupProd || f == Field::kLtzMaskProd ||
                            f == Field::kLtzRootMono;
    int detected = 0;
    for (int t = 0; t < kTrials; ++t) {
      const bool mac = t % 2 == 1;
      const bool arith = f == Field::kEdaR || f == Field::kDaArith || f == Field::kLtzRootMono ||
                         f == Field::kLtzR;
      const int bit = mac || arith ? static_cast<int>(prg.Uniform(64)) : 0;
      const std::size_t index = prg.Uniform(1000);
      // Bits and products that a 64-bit comparison uses.
      const std::size_t bitpos = f == Field::kEdaProd  ? prg.Uniform(edabit::kProducts)
                                 : f == Field::kEdaBit ? prg.Uniform(64)
                                                       : prg.Uniform(1000);
      const auto party = static_cast<std::size_t>(prg.Uniform(3));
      // LessThanZero's width: 64 (4 super-nodes of 4 groups) or 40 (4, 3, 3).
      const int bits = (t / 2) % 2 == 0 ? 64 : 40;
      CmpHarness<P> h(50 + static_cast<std::uint64_t>(t));
      TamperBitPrep tp(h.bits->store(static_cast<PartyId>(party)), f, mac, index, bitpos, bit);
      std::vector<BitPreprocessing<P>*> bp(3, nullptr);
      bp[party] = &tp;
      SCOPED_TRACE("field " + std::to_string(static_cast<int>(f)) + " mac " + std::to_string(mac) +
                   " bit " + std::to_string(bit) + " pos " + std::to_string(bitpos) + " party " +
                   std::to_string(party) + " width " + std::to_string(bits));
      const Outcome o = Attack(h, bp, {}, nullptr, bits);
      EXPECT_NE(o, Outcome::kAcceptedWrong);
      if (!may_vanish) {
        EXPECT_EQ(o, Outcome::kDetected);
      }
      detected += o == Outcome::kDetected ? 1 : 0;
    }
    EXPECT_GT(detected, 0) << "field " << static_cast<int>(f);
  }
}

TEST(CompareTamper, FlippedOpenedBitOnTheWireIsDetected) {
  Prg prg(TestSeed(42));
  for (int t = 0; t < kTrials; ++t) {
    CmpHarness<P> h(60 + static_cast<std::uint64_t>(t));
    const auto party = static_cast<std::size_t>(prg.Uniform(3));
    // Sends after arming: LessThanZero's 2 x arithmetic open of c (sends 0, 1), 2 for the
    // combination round (2, 3: 6 x 31 bits) and 2 for the fused root (4, 5: 6 x 7 bits);
    // then MsbBits' c (6, 7) and its first AND level (8, 9): pick one of sends 2..9, any of
    // its first 6 bits (n = 6 values: the smallest message has 42 bits).
    const int target = 2 + static_cast<int>(prg.Uniform(8));
    const std::size_t byte = 0;
    const int bit = static_cast<int>(prg.Uniform(6));
    TamperChannel ch(h.arith.mesh->party(static_cast<PartyId>(party)), target, byte, bit);
    std::vector<net::Channel*> chans(3, nullptr);
    chans[party] = &ch;
    SCOPED_TRACE("send " + std::to_string(target) + " bit " + std::to_string(bit));
    EXPECT_EQ(Attack(h, {}, chans, &ch), Outcome::kDetected);
  }
}

}  // namespace
}  // namespace mpcache::mpc
