#include <gtest/gtest.h>

#include <type_traits>

#include "preproc/in_process_dealer.h"

namespace mpcache::preproc {
namespace {

using mpc::SemiHonest;
using mpc::Shares;
using mpc::Spdz2k;
using mpc::u128;

static_assert(!std::is_copy_constructible_v<mpc::Triples<Spdz2k>>);
static_assert(!std::is_copy_constructible_v<mpc::TruncPairs<SemiHonest>>);
static_assert(!std::is_copy_constructible_v<mpc::MatrixTriple<Spdz2k>>);
static_assert(std::is_move_constructible_v<mpc::Triples<Spdz2k>>);

template <typename P>
class DealerTest : public ::testing::Test {};
using Modes = ::testing::Types<SemiHonest, Spdz2k>;
TYPED_TEST_SUITE(DealerTest, Modes);

// Reconstruct shares held by three parties; in malicious mode also check the MACs.
template <typename P>
std::vector<std::uint64_t> Open(const std::array<const Shares<P>*, 3>& s, u128 alpha) {
  const std::size_t n = s[0]->size();
  std::vector<std::uint64_t> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    typename P::Word v = 0;
    u128 m = 0;
    for (auto* p : s) {
      v += p->v[i];
      if constexpr (P::kMalicious) m += p->m[i];
    }
    if constexpr (P::kMalicious) {
      EXPECT_TRUE(m == alpha * v) << "bad MAC at " << i;
    }
    out[i] = mpc::Low64(v);
  }
  return out;
}

TYPED_TEST(DealerTest, ItemsAreCorrectAndAuthenticated) {
  using P = TypeParam;
  auto d = InProcessDealer<P>::Create(TestSeed(1), 3, /*on_demand=*/true).value();
  const u128 alpha = d->dealer().mac_key();
  const std::size_t n = 1000;
  std::vector<mpc::Triples<P>> t;
  std::vector<mpc::SquarePairs<P>> sq;
  std::vector<mpc::TruncPairs<P>> tr;
  std::vector<Shares<P>> bits;
  std::vector<mpc::InputMasks<P>> masks;
  std::vector<mpc::MatrixMask<P>> mm;
  std::vector<mpc::MatrixTriple<P>> mt;
  for (int i = 0; i < 3; ++i) {  // every party asks for the same things in the same order
    auto& s = d->store(i);
    t.push_back(s.GetTriples(n).value());
    sq.push_back(s.GetSquares(n).value());
    tr.push_back(s.GetTruncPairs(n, 16).value());
    bits.push_back(s.GetBits(n).value());
    masks.push_back(s.GetInputMasks(n, 1).value());
    mm.push_back(s.GetMatrixMask(4, 6).value());
    mt.push_back(s.GetMatrixTriple(mm.back().id, mpc::MaskSide::kRight, 3).value());
  }
  const auto a = Open<P>({&t[0].a, &t[1].a, &t[2].a}, alpha);
  const auto b = Open<P>({&t[0].b, &t[1].b, &t[2].b}, alpha);
  const auto c = Open<P>({&t[0].c, &t[1].c, &t[2].c}, alpha);
  for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(c[i], a[i] * b[i]);
  const auto s1 = Open<P>({&sq[0].a, &sq[1].a, &sq[2].a}, alpha);
  const auto s2 = Open<P>({&sq[0].aa, &sq[1].aa, &sq[2].aa}, alpha);
  for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(s2[i], s1[i] * s1[i]);
  const auto r = Open<P>({&tr[0].r, &tr[1].r, &tr[2].r}, alpha);
  const auto top = Open<P>({&tr[0].r_top, &tr[1].r_top, &tr[2].r_top}, alpha);
  const auto sh = Open<P>({&tr[0].r_shift, &tr[1].r_shift, &tr[2].r_shift}, alpha);
  for (std::size_t i = 0; i < n; ++i) {
    EXPECT_EQ(top[i], r[i] >> 63);
    EXPECT_EQ(sh[i], (r[i] & ((std::uint64_t{1} << 63) - 1)) >> 16);
  }
  const auto bv = Open<P>({&bits[0], &bits[1], &bits[2]}, alpha);
  std::size_t ones = 0;
  for (auto x : bv) {
    EXPECT_LE(x, 1u);
    ones += x;
  }
  EXPECT_GT(ones, n / 3);
  EXPECT_LT(ones, 2 * n / 3);
  const auto mv = Open<P>({&masks[0].r, &masks[1].r, &masks[2].r}, alpha);
  EXPECT_TRUE(masks[0].clear.empty());
  EXPECT_TRUE(masks[2].clear.empty());
  EXPECT_EQ(masks[1].clear, mv);  // only the owner knows r
  const auto av = Open<P>({&mm[0].a, &mm[1].a, &mm[2].a}, alpha);
  const auto bm = Open<P>({&mt[0].b, &mt[1].b, &mt[2].b}, alpha);  // 3 x 4
  const auto cm = Open<P>({&mt[0].c, &mt[1].c, &mt[2].c}, alpha);  // 3 x 6
  for (std::size_t i = 0; i < 3; ++i) {
    for (std::size_t j = 0; j < 6; ++j) {
      std::uint64_t want = 0;
      for (std::size_t k = 0; k < 4; ++k) want += bm[i * 4 + k] * av[k * 6 + j];
      EXPECT_EQ(cm[i * 6 + j], want);
    }
  }
}

TYPED_TEST(DealerTest, OnlyTheLastPartyReceivesCorrections) {
  using P = TypeParam;
  const Security sec = P::kMalicious ? Security::kMalicious : Security::kSemiHonest;
  auto dealer = Dealer::Create(sec, TestSeed(2)).value();
  const std::uint64_t n = 5000;
  auto out = dealer->Make({.type = ItemType::kTriple, .count = n}).value();
  EXPECT_TRUE(out.parties[0].payload.empty());
  EXPECT_TRUE(out.parties[1].payload.empty());
  // Semi-honest: c only (8 B); malicious: c (16 B) + 3 MACs (16 B each).
  EXPECT_EQ(out.parties[2].payload.size(), P::kMalicious ? 64 * n : 8 * n);
  auto tr = dealer->Make({.type = ItemType::kTrunc, .count = n, .frac_bits = 16}).value();
  EXPECT_EQ(tr.parties[2].payload.size(), P::kMalicious ? (2 + 3) * 16 * n : 2 * 8 * n);
}

TEST(Batch, SerializeRoundTripAndRejectCorruption) {
  auto dealer = Dealer::Create(Security::kMalicious, TestSeed(3)).value();
  auto out = dealer->Make({.type = ItemType::kTrunc, .count = 10, .frac_bits = 12}).value();
  const Batch& b = out.parties[2];
  const auto bytes = b.Serialize();
  EXPECT_EQ(bytes.size(), b.WireSize());
  auto back = Batch::Parse(bytes).value();
  EXPECT_EQ(back.payload, b.payload);
  EXPECT_TRUE(back.request == b.request);
  EXPECT_EQ(back.seq, b.seq);
  EXPECT_EQ(back.party, 2);
  auto bad = bytes;
  bad[0] = 'X';
  EXPECT_EQ(Batch::Parse(bad).error().code(), ErrorCode::kCorruptData);
  auto short_bytes = bytes;
  short_bytes.pop_back();
  EXPECT_EQ(Batch::Parse(short_bytes).error().code(), ErrorCode::kCorruptData);
  // A parsed batch is usable by its party.
  PartyStore<Spdz2k> store(2, 3, dealer->party_seed(2));
  ASSERT_TRUE(store.Accept(back).ok());
  EXPECT_EQ(store.available(ItemType::kTrunc, 12), 10u);
}

TEST(PartyStore, ItemsAreConsumedOnceAndBatchesCannotBeReplayed) {
  auto dealer = Dealer::Create(Security::kMalicious, TestSeed(4)).value();
  PartyStore<Spdz2k> store(0, 3, dealer->party_seed(0));
  auto out = dealer->Make({.type = ItemType::kTriple, .count = 8}).value();
  ASSERT_TRUE(store.Accept(out.parties[0]).ok());
  // The same batch again: rejected (replay), nothing added.
  Status replay = store.Accept(out.parties[0]);
  ASSERT_FALSE(replay.ok());
  EXPECT_EQ(replay.error().code(), ErrorCode::kProtocol);
  EXPECT_EQ(store.available(ItemType::kTriple), 8u);
  // A batch for another party is refused.
  EXPECT_FALSE(store.Accept(out.parties[1]).ok());
  auto first = store.GetTriples(4).value();
  auto second = store.GetTriples(4).value();
  EXPECT_EQ(store.consumed(ItemType::kTriple), 8u);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_TRUE(first.a.v[i] != second.a.v[i]);
  // The pool is dry and there is no refill source: kExhausted, never a reused triple.
  auto third = store.GetTriples(1);
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.error().code(), ErrorCode::kExhausted);
  // Skipping a batch (out of order) is refused too.
  auto b1 = dealer->Make({.type = ItemType::kTriple, .count = 2}).value();
  auto b2 = dealer->Make({.type = ItemType::kTriple, .count = 2}).value();
  EXPECT_EQ(store.Accept(b2.parties[0]).error().code(), ErrorCode::kProtocol);
  EXPECT_TRUE(store.Accept(b1.parties[0]).ok());
}

TEST(PartyStore, RejectsACorrectionOfTheWrongSize) {
  auto dealer = Dealer::Create(Security::kSemiHonest, TestSeed(5)).value();
  PartyStore<SemiHonest> store(2, 3, dealer->party_seed(2));
  auto out = dealer->Make({.type = ItemType::kTriple, .count = 8}).value();
  out.parties[2].payload.pop_back();
  EXPECT_EQ(store.Accept(out.parties[2]).error().code(), ErrorCode::kCorruptData);
}

TEST(InProcessDealer, PartiesAskingForDifferentThingsAreRefused) {
  auto d = InProcessDealer<SemiHonest>::Create(TestSeed(6)).value();
  ASSERT_TRUE(d->store(0).GetTriples(10).ok());
  auto other = d->store(1).GetTriples(11);  // same sequence number, different request
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().code(), ErrorCode::kProtocol);
}

TEST(InProcessDealer, CountsOfflineBytesPerParty) {
  auto d = InProcessDealer<Spdz2k>::Create(TestSeed(7), 3, false).value();
  ASSERT_TRUE(d->Provide({.type = ItemType::kTriple, .count = 1000}).ok());
  const OfflineStats s = d->stats();
  EXPECT_EQ(s.bytes_to_party[2] - s.bytes_to_party[0], 64000u);  // corrections only
  EXPECT_EQ(s.bytes_to_party[0], s.bytes_to_party[1]);           // a header each
  EXPECT_LT(s.bytes_to_party[0], 100u);
  EXPECT_EQ(d->store(1).available(ItemType::kTriple), 1000u);
  EXPECT_EQ(d->store(1).GetTriples(1001).error().code(), ErrorCode::kExhausted);
}

}  // namespace
}  // namespace mpcache::preproc
