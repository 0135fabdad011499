// Malicious mode: a single flipped bit in one party's share, MAC share, triple share,
// truncation-pair share, input mask or sent message makes the next MAC check fail at
// every party, and after that nothing is released.
//
// Bit positions: value shares live in Z_2^128 but only their low 64 bits carry the value
// (the high bits never reach the low ones under + and *), so value flips are drawn from
// bits 0..63 — a flip above changes no value (no attack); likewise for an opening, which
// carries each share at full width. A consistent lie (the same to both peers) is the
// stronger attack: attack_test.cc. For the truncation pair's top
// bit r_top (weighted by 2^(63-f)), flips at bits <= f are the ones that reach the value.
// MAC shares: bits 0..63 (detection fails only if the coefficient chi = 0, prob. 2^-64);
// a flip at bit j >= 64 changes no value and is caught with probability 1 - 2^(j-128).
#include <gtest/gtest.h>

#include <atomic>

#include "common/prg.h"
#include "harness.h"
#include "mpc/attention_product.h"
#include "mpc/beaver.h"
#include "mpc/io.h"
#include "mpc/matmul.h"
#include "mpc/trunc.h"

namespace mpcache::mpc {
namespace {

using P = Spdz2k;
using testing::Harness;
using testing::Share;
using Vec = std::vector<std::uint64_t>;
constexpr int kTrials = 40;

void Flip(Shares<P>& s, bool mac, std::size_t index, int bit) {
  if (mac) {
    s.m[index] ^= u128{1} << bit;
  } else {
    s.v[index] ^= u128{1} << bit;
  }
}

// Preprocessing that flips one bit of one component of the next item of one type: triples,
// square pairs, truncation pairs, input masks, matrix masks and matrix triples (every item
// the arithmetic protocols consume; arithmetic bits and randoms are consumed by none since
// the MAC check needs no random: they pass through).
class TamperPrep final : public Preprocessing<P> {
 public:
  enum Field {
    kA,
    kB,
    kC,
    kTruncR,
    kTruncTop,
    kTruncShift,
    kSquareA,
    kSquareAA,
    kInputMask,
    kMatrixMask,
    kMatrixB,
    kMatrixC,
    kAttentionB,
    kAttentionC
  };
  TamperPrep(Preprocessing<P>& inner, Field f, bool mac, std::size_t index, int bit)
      : inner_(inner), field_(f), mac_(mac), index_(index), bit_(bit) {}
  PartyId party() const override { return inner_.party(); }
  u128 mac_key_share() const override { return inner_.mac_key_share(); }
  Result<Triples<P>> GetTriples(std::size_t n) override {
    MPCACHE_ASSIGN_OR_RETURN(Triples<P> t, inner_.GetTriples(n));
    if (field_ == kA) Apply(t.a);
    if (field_ == kB) Apply(t.b);
    if (field_ == kC) Apply(t.c);
    return t;
  }
  Result<SquarePairs<P>> GetSquares(std::size_t n) override {
    MPCACHE_ASSIGN_OR_RETURN(SquarePairs<P> t, inner_.GetSquares(n));
    if (field_ == kSquareA) Apply(t.a);
    if (field_ == kSquareAA) Apply(t.aa);
    return t;
  }
  Result<TruncPairs<P>> GetTruncPairs(std::size_t n, int f) override {
    MPCACHE_ASSIGN_OR_RETURN(TruncPairs<P> t, inner_.GetTruncPairs(n, f));
    if (field_ == kTruncR) Apply(t.r);
    if (field_ == kTruncTop) Apply(t.r_top);
    if (field_ == kTruncShift) Apply(t.r_shift);
    return t;
  }
  Result<Shares<P>> GetBits(std::size_t n) override { return inner_.GetBits(n); }
  Result<Shares<P>> GetRandoms(std::size_t n) override { return inner_.GetRandoms(n); }
  Result<InputMasks<P>> GetInputMasks(std::size_t n, PartyId owner) override {
    MPCACHE_ASSIGN_OR_RETURN(InputMasks<P> m, inner_.GetInputMasks(n, owner));
    if (field_ == kInputMask) Apply(m.r);
    return m;
  }
  Result<MatrixMask<P>> GetMatrixMask(std::size_t r, std::size_t c) override {
    MPCACHE_ASSIGN_OR_RETURN(MatrixMask<P> m, inner_.GetMatrixMask(r, c));
    if (field_ == kMatrixMask) Apply(m.a);
    return m;
  }
  Result<MatrixTriple<P>> GetMatrixTriple(std::uint64_t id, MaskSide s, std::size_t o) override {
    MPCACHE_ASSIGN_OR_RETURN(MatrixTriple<P> t, inner_.GetMatrixTriple(id, s, o));
    if (field_ == kMatrixB) Apply(t.b);
    if (field_ == kMatrixC) Apply(t.c);
    return t;
  }
  Result<FusedTriples<P>> GetFusedTriples(std::size_t n, const FusedShape& shape) override {
    return inner_.GetFusedTriples(n, shape);
  }
  Result<AttentionTriple<P>> GetAttentionTriple(const AttentionShape& shape) override {
    MPCACHE_ASSIGN_OR_RETURN(AttentionTriple<P> t, inner_.GetAttentionTriple(shape));
    if (field_ == kAttentionB) Apply(t.b);
    if (field_ == kAttentionC) Apply(t.c);
    return t;
  }
  bool done() const { return done_; }

 private:
  void Apply(Shares<P>& s) {
    if (done_) return;  // the first item of the field only
    Flip(s, mac_, index_ % s.size(), bit_);
    done_ = true;
  }
  Preprocessing<P>& inner_;
  Field field_;
  bool mac_;
  std::size_t index_;
  int bit_;
  bool done_ = false;
};

// A channel that, once armed, flips one bit of the next message it sends.
class TamperChannel final : public net::Channel {
 public:
  TamperChannel(net::Channel& inner, Prg& prg) : inner_(inner), prg_(prg) {}
  std::atomic<bool> armed{false};
  std::size_t element_bytes = 0;  // > 8: the message is an opening of values this wide
  net::PartyId self() const override { return inner_.self(); }
  int num_parties() const override { return inner_.num_parties(); }
  Status Flush() override { return inner_.Flush(); }

 protected:
  Status DoSend(net::PartyId peer, std::span<const std::uint8_t> data) override {
    if (!armed.exchange(false) || data.empty()) return inner_.Send(peer, data);
    std::vector<std::uint8_t> copy(data.begin(), data.end());
    std::uint64_t bit = prg_.Uniform(copy.size() * 8);
    if (element_bytes > 8) {
      // An opening at full width: flip one of the 64 bits of some value that carry it (a
      // flip above bit 63 changes no value mod 2^64: no attack).
      bit = prg_.Uniform(copy.size() / element_bytes) * element_bytes * 8 + prg_.Uniform(64);
    }
    copy[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
    return inner_.Send(peer, copy);
  }
  Status DoRecv(net::PartyId peer, std::span<std::uint8_t> data) override {
    return inner_.Recv(peer, data);
  }

 private:
  net::Channel& inner_;
  Prg& prg_;
};

Vec Random(std::size_t n, std::uint64_t seed) {
  Prg prg(TestSeed(seed));
  Vec v(n);
  for (auto& e : v) e = prg.NextU64() >> 2;
  return v;
}

// After a failed check every release path refuses.
Status ExpectClosed(Context<P>& ctx, const Shares<P>& s) {
  if (!ctx.failed()) return Internal("context not marked failed");
  if (ctx.Open(s).error().code() != ErrorCode::kMacCheckFailed) return Internal("open released");
  if (OutputTo(ctx, s, 0).error().code() != ErrorCode::kMacCheckFailed) {
    return Internal("output released");
  }
  if (OutputToClient(ctx, s).error().code() != ErrorCode::kMacCheckFailed) {
    return Internal("client output released");
  }
  if (ctx.CheckMacs().error().code() != ErrorCode::kMacCheckFailed) return Internal("check");
  return Status::Ok();
}

// Every party must see kMacCheckFailed from the check (and then refuse to release).
template <typename R>
void ExpectAllDetected(const std::vector<R>& res, const std::string& what) {
  for (std::size_t i = 0; i < res.size(); ++i) {
    ASSERT_FALSE(res[i].ok()) << what << ": party " << i << " did not detect the tampering";
    EXPECT_EQ(res[i].error().code(), ErrorCode::kMacCheckFailed)
        << what << ": party " << i << ": " << res[i].error().ToString();
  }
}

TEST(Tamper, HonestRunPasses) {
  Harness<P> h(40);
  const Vec x = Random(8, 1);
  auto res = h.Run([&](Context<P>& ctx) -> Status {
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> s, Share(ctx, x));
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> z, Mul(ctx, s, s));
    MPCACHE_ASSIGN_OR_RETURN(Vec v, ctx.Open(z));
    return ctx.CheckMacs();
  });
  testing::ExpectAllOk(res);
}

TEST(Tamper, FlippedShareOrMacShareIsDetected) {
  Prg prg(TestSeed(41));
  const Vec x = Random(16, 2);
  for (int trial = 0; trial < kTrials; ++trial) {
    Harness<P> h(100 + static_cast<std::uint64_t>(trial));
    const int who = static_cast<int>(prg.Uniform(3));
    const bool mac = prg.Uniform(2) == 1;
    const std::size_t idx = prg.Uniform(x.size());
    const int bit = static_cast<int>(prg.Uniform(64));
    auto res = h.Run([&](Context<P>& ctx) -> Status {
      MPCACHE_ASSIGN_OR_RETURN(Shares<P> s, Share(ctx, x));
      if (ctx.self() == who) Flip(s, mac, idx, bit);
      MPCACHE_ASSIGN_OR_RETURN(Vec v, ctx.Open(s));
      Status st = ctx.CheckMacs();
      if (!st.ok()) {
        MPCACHE_RETURN_IF_ERROR(ExpectClosed(ctx, s));
      }
      return st;
    });
    ExpectAllDetected(
        res, "share flip (mac=" + std::to_string(mac) + ", bit " + std::to_string(bit) + ")");
  }
}

TEST(Tamper, FlippedTripleShareIsDetected) {
  Prg prg(TestSeed(42));
  const Vec x = Random(16, 3), y = Random(16, 4);
  for (int trial = 0; trial < kTrials; ++trial) {
    Harness<P> h(200 + static_cast<std::uint64_t>(trial));
    const int who = static_cast<int>(prg.Uniform(3));
    const auto field = static_cast<TamperPrep::Field>(prg.Uniform(3));
    const bool mac = prg.Uniform(2) == 1;
    const std::size_t idx = prg.Uniform(x.size());
    const int bit = static_cast<int>(prg.Uniform(64));
    TamperPrep bad(h.dealer->store(who), field, mac, idx, bit);
    std::vector<Preprocessing<P>*> prep(3, nullptr);
    prep[static_cast<std::size_t>(who)] = &bad;
    auto res = h.Run(
        [&](Context<P>& ctx) -> Status {
          MPCACHE_ASSIGN_OR_RETURN(Shares<P> a, Share(ctx, x));
          MPCACHE_ASSIGN_OR_RETURN(Shares<P> b, Share(ctx, y));
          MPCACHE_ASSIGN_OR_RETURN(Shares<P> z, Mul(ctx, a, b));
          MPCACHE_ASSIGN_OR_RETURN(Vec v, ctx.Open(z));
          Status st = ctx.CheckMacs();
          if (!st.ok()) MPCACHE_RETURN_IF_ERROR(ExpectClosed(ctx, z));
          return st;
        },
        prep);
    ExpectAllDetected(res, "triple flip (field " + std::to_string(field) + ", mac=" +
                               std::to_string(mac) + ", bit " + std::to_string(bit) + ")");
  }
}

TEST(Tamper, FlippedTruncPairShareIsDetected) {
  Prg prg(TestSeed(43));
  const Vec x = Random(16, 5);
  const int f = 16;
  for (int trial = 0; trial < kTrials; ++trial) {
    Harness<P> h(300 + static_cast<std::uint64_t>(trial));
    const int who = static_cast<int>(prg.Uniform(3));
    const auto field = static_cast<TamperPrep::Field>(TamperPrep::kTruncR + prg.Uniform(3));
    const bool mac = prg.Uniform(2) == 1;
    const std::size_t idx = prg.Uniform(x.size());
    const int bit =
        static_cast<int>(prg.Uniform(!mac && field == TamperPrep::kTruncTop ? f + 1 : 64));
    TamperPrep bad(h.dealer->store(who), field, mac, idx, bit);
    std::vector<Preprocessing<P>*> prep(3, nullptr);
    prep[static_cast<std::size_t>(who)] = &bad;
    auto res = h.Run(
        [&](Context<P>& ctx) -> Status {
          MPCACHE_ASSIGN_OR_RETURN(Shares<P> a, Share(ctx, x));
          MPCACHE_ASSIGN_OR_RETURN(Shares<P> t, Trunc(ctx, a, f));
          MPCACHE_ASSIGN_OR_RETURN(Vec v, ctx.Open(t));
          Status st = ctx.CheckMacs();
          if (!st.ok()) MPCACHE_RETURN_IF_ERROR(ExpectClosed(ctx, t));
          return st;
        },
        prep);
    ExpectAllDetected(res, "trunc-pair flip (field " + std::to_string(field) + ", mac=" +
                               std::to_string(mac) + ", bit " + std::to_string(bit) + ")");
  }
}

TEST(Tamper, FlippedMessageBitIsDetected) {
  Prg prg(TestSeed(44));
  const Vec x = Random(16, 6), y = Random(16, 7);
  for (int trial = 0; trial < kTrials; ++trial) {
    Harness<P> h(400 + static_cast<std::uint64_t>(trial));
    // Who tampers, and which message: the input broadcast (party 0 only sends it) or the
    // Beaver opening.
    const bool input_msg = prg.Uniform(2) == 1;
    const int who = input_msg ? 0 : static_cast<int>(prg.Uniform(3));
    Prg flip_prg(TestSeed(500 + static_cast<std::uint64_t>(trial)));
    TamperChannel bad(h.mesh->party(who), flip_prg);
    std::vector<net::Channel*> chans(3, nullptr);
    chans[static_cast<std::size_t>(who)] = &bad;
    auto res = h.Run(
        [&](Context<P>& ctx) -> Status {
          if (ctx.self() == who && input_msg) bad.armed = true;
          MPCACHE_ASSIGN_OR_RETURN(Shares<P> a, Share(ctx, x));
          MPCACHE_ASSIGN_OR_RETURN(Shares<P> b, Share(ctx, y));
          if (ctx.self() == who && !input_msg) {
            bad.element_bytes = OpenBytes<P>();
            bad.armed = true;
          }
          MPCACHE_ASSIGN_OR_RETURN(Shares<P> z, Mul(ctx, a, b));
          MPCACHE_ASSIGN_OR_RETURN(Vec v, ctx.Open(z));
          Status st = ctx.CheckMacs();
          if (!st.ok()) MPCACHE_RETURN_IF_ERROR(ExpectClosed(ctx, z));
          return st;
        },
        {}, chans);
    ExpectAllDetected(res, std::string("message flip (") + (input_msg ? "input" : "open") + ")");
  }
}

TEST(Tamper, NothingIsReleasedToAnOutputReceiverAfterTampering) {
  Harness<P> h(45);
  const Vec x = Random(4, 8);
  auto res = h.Run([&](Context<P>& ctx) -> Result<Vec> {
    MPCACHE_ASSIGN_OR_RETURN(Shares<P> s, Share(ctx, x));
    if (ctx.self() == 2) s.v[1] ^= 4;
    MPCACHE_ASSIGN_OR_RETURN(Vec v, ctx.Open(s));  // opened but not yet checked
    return OutputTo(ctx, s, 1);                    // must check first, and fail
  });
  for (auto& r : res) {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::kMacCheckFailed);
  }
}

// Square pairs, input masks, matrix masks and matrix triples (fixed-mask and one-off
// products): one flipped bit of one party's share or MAC is detected by every party.
TEST(Tamper, FlippedSquareInputAndMatrixItemsAreDetected) {
  Prg prg(TestSeed(46));
  const Vec x = Random(6, 9), y = Random(6, 10);
  const TamperPrep::Field fields[] = {TamperPrep::kSquareA,   TamperPrep::kSquareAA,
                                      TamperPrep::kInputMask, TamperPrep::kMatrixMask,
                                      TamperPrep::kMatrixB,   TamperPrep::kMatrixC};
  for (int trial = 0; trial < 2 * kTrials; ++trial) {
    Harness<P> h(800 + static_cast<std::uint64_t>(trial));
    const TamperPrep::Field field = fields[trial % 6];
    const int who = static_cast<int>(prg.Uniform(3));
    const bool mac = prg.Uniform(2) == 1;
    const int bit = static_cast<int>(prg.Uniform(64));
    TamperPrep bad(h.dealer->store(who), field, mac, prg.Uniform(64), bit);
    std::vector<Preprocessing<P>*> prep(3, nullptr);
    prep[static_cast<std::size_t>(who)] = &bad;
    auto res = h.Run(
        [&](Context<P>& ctx) -> Status {
          MPCACHE_ASSIGN_OR_RETURN(Shares<P> a, Share(ctx, x));  // input masks
          MPCACHE_ASSIGN_OR_RETURN(Shares<P> b, Share(ctx, y));
          Shares<P> out;
          if (field == TamperPrep::kSquareA || field == TamperPrep::kSquareAA) {
            MPCACHE_ASSIGN_OR_RETURN(out, Square(ctx, a));
          } else if (field == TamperPrep::kInputMask) {
            out = Add(a, b);
          } else {
            // 2 x 3 fixed operand times 3 x 2, and a one-off 2 x 3 . 3 x 2 product.
            MPCACHE_ASSIGN_OR_RETURN(FixedOperand<P> fa, MaskFixed(ctx, a, 2, 3));
            MPCACHE_ASSIGN_OR_RETURN(Shares<P> p1, MatMul(ctx, fa, b, 2));
            MPCACHE_ASSIGN_OR_RETURN(Shares<P> p2, MatMul(ctx, a, b, 2, 3, 2));
            out = Add(p1, p2);
          }
          MPCACHE_ASSIGN_OR_RETURN(Vec v, ctx.Open(out));
          Status st = ctx.CheckMacs();
          if (!st.ok()) MPCACHE_RETURN_IF_ERROR(ExpectClosed(ctx, out));
          return st;
        },
        prep);
    ASSERT_TRUE(bad.done()) << "field " << field << " was never consumed";
    ExpectAllDetected(res, "item flip (field " + std::to_string(field) + ", mac=" +
                               std::to_string(mac) + ", bit " + std::to_string(bit) + ")");
  }
}

// Attention triples (mpc/attention_product.h): one flipped bit of one party's share or MAC
// of the query's mask B, the weights' mask B or their C is detected by every party.
TEST(Tamper, FlippedAttentionTriplesAreDetected) {
  Prg prg(TestSeed(47));
  const Vec kv = Random(8, 11), q = Random(4, 12), p = Random(6, 13);
  const TamperPrep::Field fields[] = {TamperPrep::kAttentionB, TamperPrep::kAttentionC};
  for (int trial = 0; trial < kTrials; ++trial) {
    Harness<P> h(900 + static_cast<std::uint64_t>(trial));
    const TamperPrep::Field field = fields[trial % 2];
    const bool mix = (trial / 2) % 2 == 1;
    const int who = static_cast<int>(prg.Uniform(3));
    const bool mac = prg.Uniform(2) == 1;
    const int bit = static_cast<int>(prg.Uniform(64));
    TamperPrep bad(h.dealer->store(who), field, mac, prg.Uniform(64), bit);
    std::vector<Preprocessing<P>*> prep(3, nullptr);
    prep[static_cast<std::size_t>(who)] = &bad;
    auto res = h.Run(
        [&](Context<P>& ctx) -> Status {
          // 3 rows of kv_dim 2 in blocks of 2; 2 heads of 2 on one kv head.
          MPCACHE_ASSIGN_OR_RETURN(Shares<P> rows, Share(ctx, kv));
          MPCACHE_ASSIGN_OR_RETURN(Shares<P> sq, Share(ctx, q));
          MPCACHE_ASSIGN_OR_RETURN(Shares<P> sp, Share(ctx, p));
          std::vector<FixedBlock<P>> blocks(2);
          for (FixedBlock<P>& f : blocks) {
            MPCACHE_ASSIGN_OR_RETURN(MatrixMask<P> m, ctx.prep().GetMatrixMask(2, 2));
            f = {m.id, 2, 0, Shares<P>(4), {}, std::move(m.a)};
          }
          std::vector<std::pair<FixedBlock<P>*, Shares<P>>> append;
          for (std::size_t t = 0; t < 3; ++t)
            append.emplace_back(&blocks[t / 2], rows.Slice(2 * t, 2));
          MPCACHE_RETURN_IF_ERROR(AppendRows<P>(ctx, std::move(append)));
          const std::vector<BlockUse<P>> use{{&blocks[0], 2}, {&blocks[1], 1}};
          Shares<P> out;
          if (mix) {
            MPCACHE_ASSIGN_OR_RETURN(out, AttentionMix<P>(ctx, {2, 2, 2}, sp, use));
          } else {
            MPCACHE_ASSIGN_OR_RETURN(out, AttentionScores<P>(ctx, {2, 2, 2}, sq, use));
          }
          MPCACHE_ASSIGN_OR_RETURN(Vec v, ctx.Open(out));
          Status st = ctx.CheckMacs();
          if (!st.ok()) MPCACHE_RETURN_IF_ERROR(ExpectClosed(ctx, out));
          return st;
        },
        prep);
    ASSERT_TRUE(bad.done()) << "field " << field << " was never consumed";
    ExpectAllDetected(res, "attention item flip (field " + std::to_string(field) +
                               ", mix=" + std::to_string(mix) + ", mac=" + std::to_string(mac) +
                               ", bit " + std::to_string(bit) + ")");
  }
}

}  // namespace
}  // namespace mpcache::mpc
