// Issue 10 at the network dealer's request handler (Answer over a DealerSession, as the
// daemon's connection threads call it): the crafted requests are refused with an error
// naming the field and the pool.* setting, and the dealer keeps serving: the same
// session's other parties and another session get well-formed answers that reconstruct
// to correct items. (tests/e2e/dealer_test.cc does the same against the mpcache-dealer
// process over TLS.)
#include <gtest/gtest.h>

#include <string>

#include "daemon/dealer_session.h"
#include "preproc/party_store.h"

namespace mpcache::daemon {
namespace {

using mpc::MaskSide;
using preproc::ItemType;

constexpr std::uint64_t kTwo62 = std::uint64_t{1} << 62;

dealer_proto::Join SmallJoin(preproc::Security sec, std::uint64_t session) {
  dealer_proto::Join j;
  j.session = session;
  j.security = sec;
  j.prompt_len = 2;
  j.steps = 3;
  j.vocab = 5;
  return j;
}

Result<std::vector<std::uint8_t>> Ask(DealerSession& s, int party, const preproc::BatchRequest& req,
                                      std::uint64_t seq) {
  return Answer(s, party, dealer_proto::Encode(dealer_proto::BatchRequest{req, seq}));
}

void ExpectRefused(const Result<std::vector<std::uint8_t>>& r,
                   std::initializer_list<const char*> words, const std::string& what) {
  ASSERT_FALSE(r.ok()) << what << ": answered";
  for (const char* w : words) {
    EXPECT_NE(r.error().message().find(w), std::string::npos)
        << what << ": \"" << r.error().message() << "\" does not name \"" << w << "\"";
  }
}

// Every party asks for n triples under `seq`; the answers, expanded with the parties'
// seeds, reconstruct to c = a b (and, in malicious mode, correct MACs).
template <typename P>
void ExpectServesTriples(DealerSession& s, std::uint64_t seq, std::size_t n) {
  std::vector<std::unique_ptr<preproc::PartyStore<P>>> stores;
  mpc::u128 alpha = 0;
  for (int p = 0; p < 3; ++p) {
    auto setup = s.SetupFor(p);
    ASSERT_TRUE(setup.ok()) << setup.error().ToString();
    stores.push_back(std::make_unique<preproc::PartyStore<P>>(p, 3, setup->party_seed));
    alpha += stores.back()->mac_key_share();
    for (const auto& b : setup->client_batches) ASSERT_TRUE(stores.back()->Accept(b).ok());
    for (std::uint64_t k = 0; k < seq; ++k) stores.back()->IssueSeq(ItemType::kTriple);
  }
  std::vector<mpc::Triples<P>> t;
  for (int p = 0; p < 3; ++p) {
    auto answer = Ask(s, p, {.type = ItemType::kTriple, .count = n}, seq);
    ASSERT_TRUE(answer.ok()) << answer.error().ToString();
    auto batch = dealer_proto::DecodeBatch(*answer);
    ASSERT_TRUE(batch.ok()) << batch.error().ToString();
    auto& store = *stores[static_cast<std::size_t>(p)];
    ASSERT_TRUE(store.Accept(*batch).ok());
    t.push_back(store.GetTriples(n).value());
  }
  for (std::size_t i = 0; i < n; ++i) {
    typename P::Word a = 0, b = 0, c = 0;
    for (const auto& x : t) a += x.a.v[i], b += x.b.v[i], c += x.c.v[i];
    EXPECT_EQ(mpc::Low64(c), mpc::Low64(a) * mpc::Low64(b)) << i;
    if constexpr (P::kMalicious) {
      mpc::u128 m = 0;
      for (const auto& x : t) m += x.c.m[i];
      EXPECT_TRUE(m == alpha * c) << "MAC of c at " << i;
    }
  }
}

template <typename P>
class DealerSessionLimits : public ::testing::Test {};
using Modes = ::testing::Types<mpc::SemiHonest, mpc::Spdz2k>;
TYPED_TEST_SUITE(DealerSessionLimits, Modes);

TYPED_TEST(DealerSessionLimits, CraftedRequestsAreRefusedAndTheDealerKeepsServing) {
  using P = TypeParam;
  const auto sec = P::kMalicious ? preproc::Security::kMalicious : preproc::Security::kSemiHonest;
  auto attacked = DealerSession::Create(SmallJoin(sec, 1)).value();
  auto other = DealerSession::Create(SmallJoin(sec, 2)).value();

  // Party 0: the issue's mask, rows x cols = (2^62 + 1) x 4 (wraps to 4).
  ExpectRefused(
      Ask(*attacked, 0, {.type = ItemType::kMatrixMask, .rows = kTwo62 + 1, .cols = 4}, 0),
      {"matrix-mask", "rows x cols", "overflows", "pool.max_matrix_elements"}, "(2^62+1) x 4");
  // Party 1: the left-side triple on it (mask #0 was never made).
  ExpectRefused(
      Ask(*attacked, 1,
          {.type = ItemType::kMatrixTriple, .mask_id = 0, .side = MaskSide::kLeft, .other = 4}, 0),
      {"matrix-triple", "mask_id 0", "ask for the matrix mask first"}, "triple on #0");
  // A legal-looking 2^31-element mask (~32 GiB at the dealer in malicious mode).
  ExpectRefused(
      Ask(*attacked, 2, {.type = ItemType::kMatrixMask, .rows = 1 << 15, .cols = 1 << 16}, 0),
      {"rows x cols = 2147483648", "exceeds the limit of 268435456",
       "pool.max_matrix_elements in the dealer's config"},
      "2^31-element mask");
  // A triple whose other dimension overflows, on a real mask.
  for (int p = 0; p < 3; ++p) {
    ASSERT_TRUE(Ask(*attacked, p, {.type = ItemType::kMatrixMask, .rows = 4, .cols = 4}, 0).ok());
  }
  ExpectRefused(
      Ask(*attacked, 0,
          {.type = ItemType::kMatrixTriple, .mask_id = 0, .side = MaskSide::kLeft, .other = kTwo62},
          0),
      {"cols x other", "overflows"}, "left triple, other 2^62");
  // Overflowing counts for every elementwise type, over the capacity.
  for (ItemType t : {ItemType::kTriple, ItemType::kSquare, ItemType::kTrunc, ItemType::kBit,
                     ItemType::kRandom, ItemType::kInputMask}) {
    preproc::BatchRequest req{.type = t, .count = (~std::uint64_t{0}) / 3 + 1, .frac_bits = 16};
    const std::uint64_t seq = t == ItemType::kInputMask ? 2 : 0;  // 0, 1: the client's
    ExpectRefused(Ask(*attacked, 1, req, seq),
                  {ItemTypeName(t), "count", "exceeds the limit", "pool.capacity_items"},
                  ItemTypeName(t));
  }
  // Comparison material: over pool.capacity_items too.
  ExpectRefused(Answer(*attacked, 2,
                       dealer_proto::Encode(
                           dealer_proto::BitRequest{preproc::BitItem::kEdaBit, ~std::uint64_t{0}})),
                {"pool.capacity_items"}, "2^64 - 1 edaBits");

  // The dealer goes on: another session, and the attacked one, answer well-formed requests.
  ExpectServesTriples<P>(*other, 0, 100);
  ExpectServesTriples<P>(*attacked, 0, 50);
}

TEST(DealerSessionLimits, TheMatrixLimitBoundsMasksAndTheTriplesBAndC) {
  DealerLimits limits;
  limits.max_matrix_elements = 64;
  auto s = DealerSession::Create(SmallJoin(preproc::Security::kMalicious, 3), limits).value();
  ExpectRefused(Ask(*s, 0, {.type = ItemType::kMatrixMask, .rows = 5, .cols = 13}, 0),
                {"rows x cols = 65", "limit of 64", "pool.max_matrix_elements"}, "5 x 13");
  ASSERT_TRUE(Ask(*s, 0, {.type = ItemType::kMatrixMask, .rows = 8, .cols = 8}, 0).ok());
  ExpectRefused(
      Ask(*s, 0,
          {.type = ItemType::kMatrixTriple, .mask_id = 0, .side = MaskSide::kRight, .other = 9}, 0),
      {"other x rows (B", "= 72", "pool.max_matrix_elements"}, "right triple, other 9");
  EXPECT_TRUE(
      Ask(*s, 0,
          {.type = ItemType::kMatrixTriple, .mask_id = 0, .side = MaskSide::kRight, .other = 8}, 0)
          .ok());
  DealerLimits zero;
  zero.max_matrix_elements = 0;
  auto bad = DealerSession::Create(SmallJoin(preproc::Security::kMalicious, 4), zero);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("pool.max_matrix_elements"), std::string::npos);
}

// Answers bigger than the largest message a party reads (1 GiB) are refused before they
// are made: 4M malicious edaBits (pool.capacity_items' default) would be 13 GB of
// corrections, 2^28 malicious triples under a raised capacity 16 GB.
TEST(DealerSessionLimits, AnswersNoPartyCouldReadAreRefused) {
  DealerLimits big;
  big.max_request_items = std::uint64_t{1} << 31;
  auto s = DealerSession::Create(SmallJoin(preproc::Security::kMalicious, 5), big).value();
  ExpectRefused(
      Answer(*s, 0,
             dealer_proto::Encode(dealer_proto::BitRequest{preproc::BitItem::kEdaBit, 1u << 22})),
      {"4194304 edabit items", "exceeds the largest message a party reads", "pool.capacity_items"},
      "4M edaBits");
  ExpectRefused(Ask(*s, 0, {.type = ItemType::kTriple, .count = std::uint64_t{1} << 28}, 0),
                {"triple request: correction bytes = 17179869184",
                 "the largest message a party reads", "pool.capacity_items"},
                "2^28 triples");
  ExpectServesTriples<mpc::Spdz2k>(*s, 0, 10);

  // A Join whose client mask batches (2^26 malicious masks: 2 GiB at party 2) would make
  // a Setup no party can read is refused before anything is made.
  dealer_proto::Join join = SmallJoin(preproc::Security::kMalicious, 6);
  join.prompt_len = 4096, join.vocab = 16384;
  auto huge = DealerSession::Create(join);
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.error().message().find("prompt_len x vocab = 67108864"), std::string::npos)
      << huge.error().message();
  EXPECT_NE(huge.error().message().find("largest message a party reads"), std::string::npos);
  join.prompt_len = 16;  // 2^18 masks: fine
  EXPECT_TRUE(DealerSession::Create(join).ok());
}

}  // namespace
}  // namespace mpcache::daemon
