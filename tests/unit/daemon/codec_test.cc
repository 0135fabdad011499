// The daemon wire codecs (client and dealer protocols) and the party's comparison-material
// reserve: round trips, and malformed input gives an error, never a crash.
#include <gtest/gtest.h>

#include <random>

#include "daemon/bit_pool.h"
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
    (void)dp::DecodeSetup(junk);
    (void)dp::DecodeBatchRequest(junk);
    (void)dp::DecodeBits<mpc::EdaBits<mpc::Spdz2k>>(junk);
  }
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
  b.seq = 3;
  auto b2 = dp::DecodeBatchRequest(dp::Encode(b));
  ASSERT_TRUE(b2.ok());
  EXPECT_EQ(b2->request, b.request);
  EXPECT_EQ(b2->seq, 3u);
  EXPECT_NE(dp::UnexpectedMessage(dp::EncodeError("no"), "Batch").message().find("refused: no"),
            std::string::npos);
}

// Items 0..n-1 with value i (every field), malicious layout.
mpc::DaBits<mpc::Spdz2k> Numbered(std::size_t from, std::size_t n) {
  mpc::DaBits<mpc::Spdz2k> d;
  d.b = mpc::BitShares<mpc::Spdz2k>(n);
  d.a = mpc::Shares<mpc::Spdz2k>(n);
  for (std::size_t i = 0; i < n; ++i) {
    d.b.v[i] = d.b.m[i] = from + i;
    d.a.v[i] = d.a.m[i] = from + i;
  }
  return d;
}

TEST(DealerProtocol, BitsRoundTrip) {
  auto round =
      dp::DecodeBits<mpc::DaBits<mpc::Spdz2k>>(dp::EncodeBits<mpc::Spdz2k>(Numbered(0, 5)));
  ASSERT_TRUE(round.ok());
  EXPECT_EQ(round->a.v[4], 4u);
}

}  // namespace
}  // namespace mpcache::daemon
