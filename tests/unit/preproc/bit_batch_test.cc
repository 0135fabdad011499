// Seed-compressed comparison material (bit_batch.h): the dealer's batches, serialised and
// expanded at each party, reconstruct to valid items in both modes; parties 0 and 1 get a
// header only, party 2 exactly its corrections; damaged or misaddressed batches are refused.
#include "preproc/bit_batch.h"

#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <vector>

#include "preproc/bit_dealer.h"
#include "unit/preproc/bit_checks.h"

namespace mpcache::preproc {
namespace {

using mpc::SemiHonest;
using mpc::Spdz2k;
using mpc::u128;

constexpr u128 kAlpha = (u128{0x1234} << 64) | 0x9876543210fedcbaull;

template <typename P>
class BitBatchTest : public ::testing::Test {};
using Modes = ::testing::Types<SemiHonest, Spdz2k>;
TYPED_TEST_SUITE(BitBatchTest, Modes);

template <typename P>
std::unique_ptr<InProcessBitDealer<P>> NewDealer(std::uint64_t seed) {
  return InProcessBitDealer<P>::Create(TestSeed(seed), kAlpha).value();
}

template <typename P>
testing::BitChecker<P> CheckerFor(InProcessBitDealer<P>& d) {
  return {P::kMalicious ? kAlpha : 0, d.mac_key()};
}

// Makes one batch of n items, sends every part through Serialize/Parse, expands it at
// its party and checks the reconstruction. Returns the wire sizes.
template <typename P, typename T>
std::array<std::size_t, 3> RoundTrip(InProcessBitDealer<P>& d, BitItem item, std::size_t n,
                                     std::array<BitExpander<P>, 3>& parties) {
  auto parts = d.MakeBatch(item, n);
  EXPECT_TRUE(parts.ok()) << parts.error().ToString();
  if (!parts.ok()) return {};
  std::array<T, 3> items;
  std::array<std::size_t, 3> sizes{};
  for (int p = 0; p < 3; ++p) {
    const std::vector<std::uint8_t> bytes = (*parts)[static_cast<std::size_t>(p)].Serialize();
    sizes[static_cast<std::size_t>(p)] = bytes.size();
    auto parsed = BitBatch::Parse(bytes);
    EXPECT_TRUE(parsed.ok()) << parsed.error().ToString();
    if (!parsed.ok()) return {};
    auto x = parties[static_cast<std::size_t>(p)].template Expand<T>(*parsed);
    EXPECT_TRUE(x.ok()) << x.error().ToString();
    if (!x.ok()) return {};
    items[static_cast<std::size_t>(p)] = std::move(*x);
  }
  const std::size_t ones = CheckerFor(d).Check(items, n);
  EXPECT_GT(ones, 0u) << BitItemName(item);  // random material, n >= 64
  EXPECT_LT(ones, n) << BitItemName(item);
  return sizes;
}

template <typename P>
std::array<BitExpander<P>, 3> Expanders(InProcessBitDealer<P>& d) {
  return {BitExpander<P>(0, 3, d.bit_seed(0)), BitExpander<P>(1, 3, d.bit_seed(1)),
          BitExpander<P>(2, 3, d.bit_seed(2))};
}

TYPED_TEST(BitBatchTest, EveryItemReconstructsAndOnlyPartyTwoGetsCorrections) {
  using P = TypeParam;
  auto d = NewDealer<P>(1);
  auto ex = Expanders(*d);
  if constexpr (P::kMalicious) {
    // The binary MAC key is XOR-shared (GF(2^64)).
    EXPECT_EQ(d->store(0).bit_mac_key_share() ^ d->store(1).bit_mac_key_share() ^
                  d->store(2).bit_mac_key_share(),
              d->mac_key());
  }
  const std::size_t kHeader = 36;
  // Two batches of each item (the second with another sequence number), n not a multiple
  // of 64 so that semi-honest units are partly used.
  for (int round = 0; round < 2; ++round) {
    const std::size_t n = round == 0 ? 100 : 70;
    const auto tri = RoundTrip<P, mpc::BitTriples<P>>(*d, BitItem::kBitTriple, n, ex);
    const auto eda = RoundTrip<P, mpc::EdaBits<P>>(*d, BitItem::kEdaBit, n, ex);
    const auto da = RoundTrip<P, mpc::DaBits<P>>(*d, BitItem::kDaBit, n, ex);
    const auto rnd = RoundTrip<P, mpc::BitShares<P>>(*d, BitItem::kBitRandom, n, ex);
    const auto root = RoundTrip<P, mpc::RootTuples<P>>(*d, BitItem::kRootTuple, n, ex);
    for (const auto& s : {tri, eda, da, rnd, root}) {
      EXPECT_EQ(s[0], kHeader);
      EXPECT_EQ(s[1], kHeader);
    }
    // Party 2: 8 bytes per determined word, but one bit per determined malicious binary
    // value (packed 64 to a word after the full words). Malicious units hold one item:
    // triple 3 determined words (am bm cm) and cv's bit, edaBit 233 MACs + r and its MAC (4)
    // and 169 products' bits, daBit 5, random 1 (its MAC), root tuple 3 MACs + 7 x (value,
    // MAC) (28). Semi-honest
    // units of 64 triples / edaBits / randoms: c (1 word); 169 products + 64 r (233); daBit
    // and root tuple per item: 1 and 7; randoms: nothing.
    const std::size_t units64 = (n + 63) / 64;
    if constexpr (P::kMalicious) {
      EXPECT_EQ(tri[2], kHeader + 8 * 3 * n + 8 * ((n + 63) / 64));
      EXPECT_EQ(eda[2], kHeader + 8 * 237 * n + 8 * ((169 * n + 63) / 64));
      EXPECT_EQ(da[2], kHeader + 8 * 5 * n);
      EXPECT_EQ(rnd[2], kHeader + 8 * 1 * n);
      EXPECT_EQ(root[2], kHeader + 8 * 31 * n);
    } else {
      EXPECT_EQ(tri[2], kHeader + 8 * 1 * units64);
      EXPECT_EQ(eda[2], kHeader + 8 * 233 * units64);
      EXPECT_EQ(da[2], kHeader + 8 * 1 * n);
      EXPECT_EQ(rnd[2], kHeader);
      EXPECT_EQ(root[2], kHeader + 8 * 7 * n);
    }
  }
  // The dealer's own count of correction bytes agrees (plus the beta share's 8 bytes).
  EXPECT_GT(d->stats().correction_bytes, 0u);
}

// The keystream behind a unit (FillBitUnits): one bit per malicious binary value word, the
// unit's other words whole; the same units however the stream is cut, and exactly
// BitStreamWords per unit consumed.
TEST(BitStream, ValueWordsTakeOneKeystreamBitEach) {
  for (const BitItem item : {BitItem::kBitTriple, BitItem::kEdaBit, BitItem::kDaBit,
                             BitItem::kRootTuple, LtzItem(2), LtzItem(10), LtzItem(16)}) {
    for (const Security sec : {Security::kMalicious, Security::kSemiHonest}) {
      const std::size_t uw = BitUnitWords(sec, item), units = 150;
      std::size_t values = 0;
      for (std::size_t w = 0; w < uw; ++w) values += IsBinaryValueWord(sec, item, w) ? 1 : 0;
      EXPECT_EQ(BitStreamWords(sec, item), uw - values + (values + 63) / 64) << BitItemName(item);
      if (sec == Security::kSemiHonest) {
        EXPECT_EQ(values, 0u);
      }
      std::vector<std::uint64_t> whole(units * uw), cut(units * uw);
      Prg a(TestSeed(7)), b(TestSeed(7)), raw(TestSeed(7));
      std::vector<std::uint64_t> scratch_a, scratch_b;
      FillBitUnits(a, sec, item, units, whole.data(), scratch_a);
      FillBitUnits(b, sec, item, 1, cut.data(), scratch_b);
      FillBitUnits(b, sec, item, 66, cut.data() + uw, scratch_b);
      FillBitUnits(b, sec, item, units - 67, cut.data() + 67 * uw, scratch_b);
      EXPECT_EQ(whole, cut) << BitItemName(item);
      // Both consumed units * BitStreamWords words: their next words are the raw stream's.
      std::vector<std::uint64_t> skip(units * BitStreamWords(sec, item));
      raw.Fill(skip.data(), skip.size() * 8);
      const std::uint64_t next = raw.NextU64();
      EXPECT_EQ(a.NextU64(), next) << BitItemName(item);
      EXPECT_EQ(b.NextU64(), next) << BitItemName(item);
      // Value words are bits, about half of them ones.
      std::size_t ones = 0;
      for (std::size_t u = 0; u < units; ++u) {
        for (std::size_t w = 0; w < uw; ++w) {
          if (!IsBinaryValueWord(sec, item, w)) continue;
          ASSERT_LE(whole[u * uw + w], 1u) << BitItemName(item) << " word " << w;
          ones += whole[u * uw + w];
        }
      }
      if (values > 0) {
        const double frac = static_cast<double>(ones) / static_cast<double>(units * values);
        EXPECT_GT(frac, 0.4) << BitItemName(item);
        EXPECT_LT(frac, 0.6) << BitItemName(item);
      }
    }
  }
}

// MakeBatch fills a batch's chunks on several threads (set_threads): the batches are the same
// bytes as one thread's, over several chunks whose packed value bits do not end on a word
// boundary (edaBits: 169 bits per malicious item), and they still expand to valid items.
TYPED_TEST(BitBatchTest, ThreadsFillTheSameBatches) {
  using P = TypeParam;
  const Security sec = P::kMalicious ? Security::kMalicious : Security::kSemiHonest;
  for (const BitItem item : {BitItem::kEdaBit, LtzItem(10)}) {
    if (!P::kMalicious && item == BitItem::kEdaBit) continue;  // 576K items a chunk
    auto one = NewDealer<P>(7), many = NewDealer<P>(7);
    many->set_threads(3);
    // Three chunks and a bit, the last one short.
    const std::size_t n = (3 * BitChunkUnits(sec, item) + 5) * BitUnitItems(sec, item) - 3;
    ASSERT_LE(n, kMaxBitBatchItems);
    for (int round = 0; round < 2; ++round) {  // the workers' scratch reused the second time
      auto a = one->MakeBatch(item, n, 1).value();
      auto b = many->MakeBatch(item, n, 1).value();
      ASSERT_EQ(a.size(), b.size());
      for (std::size_t p = 0; p < a.size(); ++p) {
        EXPECT_EQ(a[p].Serialize(), b[p].Serialize()) << BitItemName(item) << " party " << p;
      }
      if (item == BitItem::kEdaBit && round == 0) {  // new expanders expect batch #0
        auto ex = Expanders(*many);
        std::array<mpc::EdaBits<P>, 3> items;
        for (std::size_t p = 0; p < 3; ++p) items[p] = ex[p].EdaBits(b[p]).value();
        CheckerFor(*many).Check(items, n);
      }
    }
  }
}

TYPED_TEST(BitBatchTest, BatchesAndPoolsShareSequenceNumbersAndStayValid) {
  using P = TypeParam;
  auto d = NewDealer<P>(2);
  auto ex = Expanders(*d);
  ASSERT_TRUE(d->Provide(BitItem::kDaBit, 64).ok());  // pool batch: sequence number 0
  std::array<mpc::DaBits<P>, 3> pooled;
  for (int p = 0; p < 3; ++p)
    pooled[static_cast<std::size_t>(p)] = d->store(p).GetDaBits(64).value();
  CheckerFor(*d).Check(pooled, 64);
  auto parts = d->MakeBatch(BitItem::kDaBit, 64).value();
  EXPECT_EQ(parts[0].seq, 1u);
  // The expanders expect sequence number 0 first: the batch is out of sequence for them.
  auto got = ex[0].DaBits(parts[0]);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.error().message().find("out of sequence"), std::string::npos);
}

TYPED_TEST(BitBatchTest, TruncatedOrCorruptedBatchesAreClearErrors) {
  using P = TypeParam;
  auto d = NewDealer<P>(3);
  auto parts = d->MakeBatch(BitItem::kEdaBit, 64).value();
  const std::vector<std::uint8_t> good = parts[2].Serialize();
  ASSERT_GT(good.size(), 36u);
  // Every truncation, including inside the header.
  for (std::size_t len : {std::size_t{0}, std::size_t{3}, std::size_t{20}, std::size_t{35},
                          std::size_t{36}, std::size_t{37}, good.size() - 8, good.size() - 1}) {
    auto r = BitBatch::Parse(std::span<const std::uint8_t>(good.data(), len));
    ASSERT_FALSE(r.ok()) << len;
    EXPECT_EQ(r.error().code(), ErrorCode::kCorruptData) << len;
  }
  auto with = [&](std::size_t at, std::uint8_t v) {
    std::vector<std::uint8_t> b = good;
    b[at] = v;
    return BitBatch::Parse(b);
  };
  EXPECT_FALSE(with(0, 'X').ok());                                // magic
  EXPECT_EQ(with(4, 9).error().code(), ErrorCode::kUnsupported);  // version
  EXPECT_FALSE(with(5, 2).ok());                                  // security
  EXPECT_FALSE(with(6, kNumBitItems).ok());                       // item
  // An unknown item is named as such (items 5.. are the comparison tuples since issue 19).
  EXPECT_NE(with(6, kNumBitItems + 1).error().message().find("item"), std::string::npos);
  std::vector<std::uint8_t> zero = good;
  std::fill(zero.begin() + 20, zero.begin() + 28, 0);  // count = 0
  EXPECT_FALSE(BitBatch::Parse(zero).ok());
  std::vector<std::uint8_t> extra = good;
  extra.push_back(0);
  EXPECT_FALSE(BitBatch::Parse(extra).ok());
  std::vector<std::uint8_t> garbage(4096, 0xAB);
  EXPECT_FALSE(BitBatch::Parse(garbage).ok());

  // A well-formed batch whose count disagrees with its corrections: refused by the
  // expander (never read past the payload).
  BitBatch more = BitBatch::Parse(good).value();
  more.count = 128;
  BitExpander<P> p2(2, 3, d->bit_seed(2));
  auto r = p2.EdaBits(more);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("corrections"), std::string::npos) << r.error().message();
  // Corrections at a party that must get none.
  BitBatch stuffed = parts[0];
  stuffed.corrections.assign(3, 1);
  BitExpander<P> p0(0, 3, d->bit_seed(0));
  EXPECT_FALSE(p0.EdaBits(stuffed).ok());
}

TYPED_TEST(BitBatchTest, WrongPartyItemOrModeIsRefused) {
  using P = TypeParam;
  using Other = std::conditional_t<P::kMalicious, SemiHonest, Spdz2k>;
  auto d = NewDealer<P>(4);
  auto parts = d->MakeBatch(BitItem::kBitTriple, 64).value();
  BitExpander<P> p1(1, 3, d->bit_seed(1));
  auto wrong_party = p1.BitTriples(parts[0]);
  ASSERT_FALSE(wrong_party.ok());
  EXPECT_NE(wrong_party.error().message().find("of party 0"), std::string::npos);
  auto wrong_item = p1.DaBits(parts[1]);
  ASSERT_FALSE(wrong_item.ok());
  EXPECT_NE(wrong_item.error().message().find("expected a dabit batch"), std::string::npos)
      << wrong_item.error().message();
  BitExpander<Other> other(1, 3, d->bit_seed(1));
  EXPECT_FALSE(other.BitTriples(parts[1]).ok());
  // The right batch still expands after the refusals; a replay is refused.
  EXPECT_TRUE(p1.BitTriples(parts[1]).ok());
  auto replay = p1.BitTriples(parts[1]);
  ASSERT_FALSE(replay.ok());
  EXPECT_NE(replay.error().message().find("out of sequence"), std::string::npos);
}

}  // namespace
}  // namespace mpcache::preproc
