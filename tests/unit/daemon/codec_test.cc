// The daemon wire codecs (client and dealer protocols) and the party's comparison-material
// reserve: round trips, and malformed input gives an error, never a crash.
#include <gtest/gtest.h>

#include <random>

#include "daemon/client_protocol.h"
#include "daemon/dealer_protocol.h"

namespace mpcache::daemon {
namespace {

namespace cp = client_proto;
namespace dp = dealer_proto;

TEST(ClientProtocol, RoundTrips) {
  cp::Generate g{42, 5, 64, 512};
  auto g2 = cp::Decode<cp::Generate>(cp::Encode(g));
  ASSERT_TRUE(g2.ok());
  EXPECT_EQ(g2->session, 42u);
  EXPECT_EQ(g2->prompt_len, 5u);
  cp::Prompt p{7, {1, 2, 3}};
  auto p2 = cp::Decode<cp::Prompt>(cp::Encode(p));
  ASSERT_TRUE(p2.ok());
  EXPECT_EQ(p2->d, p.d);
  cp::ErrorMsg e{9, 1, 2, "party 2 did not answer"};
  auto e2 = cp::Decode<cp::ErrorMsg>(cp::Encode(e));
  ASSERT_TRUE(e2.ok());
  EXPECT_EQ(e2->message, e.message);
  EXPECT_EQ(e2->blamed, 2);
  // The wrong type is refused.
  EXPECT_FALSE(cp::Decode<cp::Token>(cp::Encode(g)).ok());
}

TEST(ClientProtocol, TruncatedAndGarbageAreErrors) {
  auto bytes = cp::Encode(cp::Prompt{7, std::vector<std::uint64_t>(100, 5)});
  for (std::size_t n = 0; n < bytes.size(); n += 7) {
    std::vector<std::uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_FALSE(cp::Decode<cp::Prompt>(cut).ok()) << n;
  }
  std::mt19937_64 rng(1);
  for (int i = 0; i < 2000; ++i) {
    std::vector<std::uint8_t> junk(rng() % 64);
    for (auto& b : junk) b = static_cast<std::uint8_t>(rng());
    (void)cp::Decode<cp::Prompt>(junk);
    (void)cp::Decode<cp::ErrorMsg>(junk);
    (void)dp::DecodeJoin(junk);
    (void)dp::DecodeHello(junk);
    (void)dp::DecodeHelloReply(junk);
    (void)dp::DecodeSetup(junk);
    (void)dp::DecodeBatchRequest(junk);
    (void)dp::DecodeBitBatch(junk);
  }
}

// One encoding per message (the fuzz target fuzz_client_messages checks it for every input):
// a flag byte other than 0 or 1 is refused, not read as true.
TEST(ClientProtocol, AFlagIsZeroOrOne) {
  auto bytes = cp::Encode(cp::Continue{7, 3, true});
  ASSERT_EQ(bytes.back(), 1);
  for (const std::uint8_t flag : {2, 0x80, 0xff}) {
    bytes.back() = flag;
    auto m = cp::Decode<cp::Continue>(bytes);
    ASSERT_FALSE(m.ok()) << int{flag};
    EXPECT_NE(m.error().message().find("a flag of " + std::to_string(flag) + " (0 or 1 expected)"),
              std::string::npos)
        << m.error().message();
  }
  bytes.back() = 0;
  auto m = cp::Decode<cp::Continue>(bytes);
  ASSERT_TRUE(m.ok());
  EXPECT_FALSE(m->more);
}

// A party's start-up check (daemon/start_checks.h): Hello {party, security} -> HelloReply; the
// dealer's Error instead says why; a wrong type or mode byte is refused.
TEST(DealerProtocol, HelloRoundTripsAndRefusesWhatItIsNot) {
  dp::Hello h;
  h.party = 1;
  h.security = preproc::Security::kSemiHonest;
  auto h2 = dp::DecodeHello(dp::Encode(h));
  ASSERT_TRUE(h2.ok()) << h2.error().ToString();
  EXPECT_EQ(h2->party, 1u);
  EXPECT_EQ(h2->security, preproc::Security::kSemiHonest);
  auto r = dp::DecodeHelloReply(dp::Encode(dp::HelloReply{preproc::Security::kMalicious}));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->security, preproc::Security::kMalicious);
  auto e =
      dp::DecodeHelloReply(dp::EncodeError("security mode differs: the dealer runs malicious"));
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message().find("security mode differs"), std::string::npos);
  std::vector<std::uint8_t> bad = dp::Encode(h);
  bad.back() = 7;  // no such security mode
  EXPECT_FALSE(dp::DecodeHello(bad).ok());
  EXPECT_FALSE(dp::DecodeJoin(dp::Encode(h)).ok());  // a Hello is not a Join
}

TEST(DealerProtocol, JoinAndBatchRequestRoundTrip) {
  dp::Join j;
  j.session = 5;
  j.party = 2;
  j.security = preproc::Security::kSemiHonest;
  j.prompt_len = 3;
  j.steps = 9;
  j.vocab = 512;
  auto j2 = dp::DecodeJoin(dp::Encode(j));
  ASSERT_TRUE(j2.ok());
  EXPECT_EQ(j2->steps, 9u);
  EXPECT_EQ(j2->vocab, 512u);
  EXPECT_EQ(j2->security, preproc::Security::kSemiHonest);
  dp::BatchRequest b;
  b.request.type = preproc::ItemType::kTrunc;
  b.request.count = 77;
  b.request.frac_bits = 16;
  b.request.corrector = 1;  // a role table's corrector travels with the request
  b.seq = 3;
  auto b2 = dp::DecodeBatchRequest(dp::Encode(b));
  ASSERT_TRUE(b2.ok());
  EXPECT_EQ(b2->request, b.request);
  EXPECT_EQ(b2->request.corrector, 1);
  EXPECT_EQ(b2->seq, 3u);
  auto bits = dp::DecodeBitRequest(dp::Encode(dp::BitRequest{preproc::BitItem::kEdaBit, 512, 0}));
  ASSERT_TRUE(bits.ok());
  EXPECT_EQ(bits->corrector, 0);
  EXPECT_EQ(bits->n, 512u);
  EXPECT_NE(dp::UnexpectedMessage(dp::EncodeError("no"), "Batch").message().find("refused: no"),
            std::string::npos);
}

TEST(DealerProtocol, SetupCarriesTheBitSeed) {
  dp::Setup s;
  s.party_seed = TestSeed(1);
  s.bit_key_share = 0x1234;
  s.bit_seed = TestSeed(2);
  s.client_seed_share = TestSeed(3);
  s.client_seed_hash[31] = 7;
  s.chunk_items = 4096;
  s.max_request_items = 1 << 20;
  auto s2 = dp::DecodeSetup(dp::Encode(s));
  ASSERT_TRUE(s2.ok()) << s2.error().ToString();
  EXPECT_EQ(s2->party_seed, s.party_seed);
  EXPECT_EQ(s2->bit_key_share, 0x1234u);
  EXPECT_EQ(s2->chunk_items, 4096u);
  EXPECT_EQ(s2->max_request_items, 1u << 20);
  EXPECT_EQ(s2->bit_seed, s.bit_seed);
  EXPECT_EQ(s2->client_seed_share, s.client_seed_share);
  EXPECT_EQ(s2->client_seed_hash, s.client_seed_hash);
  // Cut anywhere: an error.
  const auto bytes = dp::Encode(s);
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(
        dp::DecodeSetup({bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n)}).ok())
        << n;
  }
}

TEST(DealerProtocol, BitBatchRoundTripAndDealerErrors) {
  preproc::BitBatch b;
  b.party = 2;
  b.item = preproc::BitItem::kRootTuple;
  b.seq = 4;
  b.count = 3;
  b.corrections = {1, 2, 3};
  const auto bytes = dp::EncodeBitBatch(b);
  EXPECT_EQ(bytes.size(), 1 + 8 + 36 + 24u);  // type, length, header, corrections
  auto b2 = dp::DecodeBitBatch(bytes);
  ASSERT_TRUE(b2.ok()) << b2.error().ToString();
  EXPECT_EQ(b2->item, preproc::BitItem::kRootTuple);
  EXPECT_EQ(b2->seq, 4u);
  EXPECT_EQ(b2->corrections, b.corrections);
  auto refused = dp::DecodeBitBatch(dp::EncodeError("out of items"));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message().find("refused: out of items"), std::string::npos);
  EXPECT_FALSE(dp::DecodeBitBatch(dp::Encode(dp::BitRequest{b.item, 3})).ok());
  // One encoding per batch (found by fuzz_dealer_messages): the reserved header byte is 0.
  auto odd = bytes;
  odd[1 + 8 + 7] = 8;
  auto r = dp::DecodeBitBatch(odd);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("reserved byte 8 (0 expected)"), std::string::npos)
      << r.error().message();
}

}  // namespace
}  // namespace mpcache::daemon
