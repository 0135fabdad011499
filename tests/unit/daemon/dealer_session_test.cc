// The dealer session's comparison material (DealerSession::Bits): three parties asking
// concurrently get aligned, seed-compressed batches that expand (with the bit seed of their
// Setup) to valid items; parties 0 and 1 receive headers only.
#include "daemon/dealer_session.h"

#include <gtest/gtest.h>

#include <thread>

#include "preproc/bit_batch.h"
#include "preproc/dealer.h"
#include "unit/preproc/bit_checks.h"

namespace mpcache::daemon {
namespace {

using preproc::BitItem;

template <typename P>
class DealerSessionBits : public ::testing::Test {};
using Modes = ::testing::Types<mpc::SemiHonest, mpc::Spdz2k>;
TYPED_TEST_SUITE(DealerSessionBits, Modes);

dealer_proto::Join SmallJoin(preproc::Security sec) {
  dealer_proto::Join j;
  j.security = sec;
  j.prompt_len = 1;
  j.steps = 1;
  j.vocab = 2;
  return j;
}

// Every party asks for the same requests, from its own thread; returns each party's
// answers in order.
std::array<std::vector<std::vector<std::uint8_t>>, 3> AskConcurrently(
    DealerSession& s, const std::vector<std::pair<BitItem, std::uint64_t>>& requests) {
  std::array<std::vector<std::vector<std::uint8_t>>, 3> answers;
  std::vector<std::thread> threads;
  for (int p = 0; p < 3; ++p) {
    threads.emplace_back([&, p] {
      for (const auto& [item, n] : requests) {
        auto a = s.Bits(p, item, n, preproc::kStaticCorrector);
        EXPECT_TRUE(a.ok()) << a.error().ToString();
        answers[static_cast<std::size_t>(p)].push_back(a.ok() ? std::move(*a)
                                                              : std::vector<std::uint8_t>());
      }
    });
  }
  for (auto& t : threads) t.join();
  return answers;
}

template <typename P, typename T>
void ExpandAndCheck(std::array<preproc::BitExpander<P>, 3>& ex,
                    const std::array<std::vector<std::uint8_t>, 3>& answer, std::size_t n,
                    const preproc::testing::BitChecker<P>& check) {
  std::array<T, 3> items;
  for (std::size_t p = 0; p < 3; ++p) {
    auto b = dealer_proto::DecodeBitBatch(answer[p]);
    ASSERT_TRUE(b.ok()) << b.error().ToString();
    EXPECT_EQ(b->count, n);
    auto x = ex[p].template Expand<T>(*b);
    ASSERT_TRUE(x.ok()) << x.error().ToString();
    items[p] = std::move(*x);
  }
  check.Check(items, n);
}

TYPED_TEST(DealerSessionBits, ConcurrentPartiesGetAlignedValidHeaderOnlyBatches) {
  using P = TypeParam;
  const auto sec = P::kMalicious ? preproc::Security::kMalicious : preproc::Security::kSemiHonest;
  auto session = DealerSession::Create(SmallJoin(sec)).value();
  std::array<dealer_proto::Setup, 3> setup;
  for (int p = 0; p < 3; ++p) setup[static_cast<std::size_t>(p)] = session->SetupFor(p).value();
  preproc::testing::BitChecker<P> check;
  for (const auto& s : setup) {
    check.beta ^= s.bit_key_share;  // XOR-shared GF(2^64) key
    check.alpha += preproc::MacKeyShare(sec, s.party_seed);
  }
  std::array<preproc::BitExpander<P>, 3> ex = {preproc::BitExpander<P>(0, 3, setup[0].bit_seed),
                                               preproc::BitExpander<P>(1, 3, setup[1].bit_seed),
                                               preproc::BitExpander<P>(2, 3, setup[2].bit_seed)};
  const std::vector<std::pair<BitItem, std::uint64_t>> requests = {
      {BitItem::kBitTriple, 100}, {BitItem::kEdaBit, 65},     {BitItem::kDaBit, 64},
      {BitItem::kBitTriple, 7},   {BitItem::kRootTuple, 100}, {BitItem::kBitRandom, 64},
      {BitItem::kEdaBit, 3}};
  const auto before = session->stats().bytes_to_party;
  const auto answers = AskConcurrently(*session, requests);
  for (std::size_t k = 0; k < requests.size(); ++k) {
    const std::array<std::vector<std::uint8_t>, 3> a = {answers[0][k], answers[1][k],
                                                        answers[2][k]};
    // Message: type byte, 8-byte length, the batch (bit_batch.h: 36-byte header).
    EXPECT_EQ(a[0].size(), 1 + 8 + preproc::kBitBatchHeaderBytes);
    EXPECT_EQ(a[1].size(), 1 + 8 + preproc::kBitBatchHeaderBytes);
    const auto [item, n] = requests[k];
    const auto units = preproc::BitUnitsFor(sec, item, n);
    EXPECT_EQ(a[2].size(), 1 + 8 + preproc::kBitBatchHeaderBytes +
                               8 * preproc::BitCorrectionWords(sec, item, units));
    switch (item) {
      case BitItem::kBitTriple:
        ExpandAndCheck<P, mpc::BitTriples<P>>(ex, a, n, check);
        break;
      case BitItem::kEdaBit:
        ExpandAndCheck<P, mpc::EdaBits<P>>(ex, a, n, check);
        break;
      case BitItem::kDaBit:
        ExpandAndCheck<P, mpc::DaBits<P>>(ex, a, n, check);
        break;
      case BitItem::kRootTuple:
        ExpandAndCheck<P, mpc::RootTuples<P>>(ex, a, n, check);
        break;
      case BitItem::kBitRandom:
        ExpandAndCheck<P, mpc::BitShares<P>>(ex, a, n, check);
        break;
    }
  }
  const auto after = session->stats().bytes_to_party;
  EXPECT_EQ(after[0] - before[0], requests.size() * (1 + 8 + preproc::kBitBatchHeaderBytes));
  EXPECT_EQ(after[1] - before[1], after[0] - before[0]);
  EXPECT_GT(after[2] - before[2], after[0] - before[0]);
}

TEST(DealerSessionBits, PartiesAskingForDifferentCountsAreRefused) {
  auto session = DealerSession::Create(SmallJoin(preproc::Security::kMalicious)).value();
  ASSERT_TRUE(session->Bits(0, BitItem::kDaBit, 10, 2).ok());
  auto other = session->Bits(1, BitItem::kDaBit, 11, 2);
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.error().message().find("different numbers of dabit"), std::string::npos)
      << other.error().message();
  EXPECT_FALSE(session->Bits(0, BitItem::kDaBit, 0, 2).ok());
}

// The corrector is part of the request (issue 13): parties whose role tables differ are
// refused, by the arithmetic and the comparison-material dealer alike, naming both.
TEST(DealerSession, PartiesNamingDifferentCorrectorsAreRefused) {
  auto session = DealerSession::Create(SmallJoin(preproc::Security::kMalicious)).value();
  ASSERT_TRUE(session->Bits(0, BitItem::kBitTriple, 64, 0).ok());
  auto bits = session->Bits(1, BitItem::kBitTriple, 64, 1);
  ASSERT_FALSE(bits.ok());
  EXPECT_NE(bits.error().message().find("different correctors"), std::string::npos)
      << bits.error().message();
  preproc::BatchRequest req{.type = preproc::ItemType::kTriple, .count = 8, .corrector = 0};
  auto b0 = session->Fetch(0, req, 0);
  ASSERT_TRUE(b0.ok()) << b0.error().ToString();
  EXPECT_EQ(b0->payload.size(),
            preproc::CorrectionBytes(preproc::Security::kMalicious, req).value());
  req.corrector = 2;
  auto b1 = session->Fetch(1, req, 0);
  ASSERT_FALSE(b1.ok());
  EXPECT_NE(b1.error().message().find("correctors party 0 and party 2"), std::string::npos)
      << b1.error().message();
  req.corrector = 3;  // not a party: refused before anything is made
  auto bad = session->Fetch(0, req, 1);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("corrector 3 is not a party"), std::string::npos)
      << bad.error().message();
}

}  // namespace
}  // namespace mpcache::daemon
