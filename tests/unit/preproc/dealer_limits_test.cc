// Issue 10 ("a party can crash the dealer"): requests whose sizes overflow 64 bits or
// exceed the limits are refused with an error naming the field, before anything is
// allocated or a sequence number is used up, and the dealer keeps serving well-formed
// requests afterwards. Before the fix the wrapped sizes passed (rows = 2^62 + 1 times
// cols = 4 "is" 4 elements) and the left-side triple on that mask wrote out of bounds.
#include <gtest/gtest.h>

#include <string>

#include "preproc/in_process_dealer.h"

namespace mpcache::preproc {
namespace {

using mpc::MaskSide;

constexpr std::uint64_t kTwo62 = std::uint64_t{1} << 62;
constexpr std::uint64_t kTwo63 = std::uint64_t{1} << 63;

// Expects `r` to be an error whose message contains every one of `words`.
template <typename T>
void ExpectRefused(const Result<T>& r, std::initializer_list<const char*> words,
                   const std::string& what) {
  ASSERT_FALSE(r.ok()) << what << ": accepted";
  for (const char* w : words) {
    EXPECT_NE(r.error().message().find(w), std::string::npos)
        << what << ": \"" << r.error().message() << "\" does not name \"" << w << "\"";
  }
}

void ExpectRefused(const Status& s, std::initializer_list<const char*> words,
                   const std::string& what) {
  ASSERT_FALSE(s.ok()) << what << ": accepted";
  for (const char* w : words) {
    EXPECT_NE(s.error().message().find(w), std::string::npos)
        << what << ": \"" << s.error().message() << "\" does not name \"" << w << "\"";
  }
}

class DealerLimits : public ::testing::TestWithParam<Security> {};
INSTANTIATE_TEST_SUITE_P(Modes, DealerLimits,
                         ::testing::Values(Security::kSemiHonest, Security::kMalicious));

// A well-formed right-side triple on a fresh 3 x 5 mask, checked: C = B A mod 2^64.
void ExpectServesAWellFormedMatrixTriple(Dealer& dealer) {
  const std::uint64_t id = dealer.next_seq(ItemType::kMatrixMask);
  auto mask = dealer.Make({.type = ItemType::kMatrixMask, .rows = 3, .cols = 5});
  ASSERT_TRUE(mask.ok()) << mask.error().ToString();
  auto triple = dealer.Make(
      {.type = ItemType::kMatrixTriple, .mask_id = id, .side = MaskSide::kRight, .other = 2});
  ASSERT_TRUE(triple.ok()) << triple.error().ToString();
  EXPECT_EQ(triple->parties[0].request.rows, 3u);
  EXPECT_EQ(triple->parties[0].request.cols, 5u);
}

TEST_P(DealerLimits, TheIssuesMaskAndLeftTripleAreRefusedAndTheDealerGoesOn) {
  auto dealer = Dealer::Create(GetParam(), TestSeed(40)).value();
  // rows x cols = (2^62 + 1) x 4 wraps to 4 in 64 bits.
  auto mask = dealer->Make({.type = ItemType::kMatrixMask, .rows = kTwo62 + 1, .cols = 4});
  ExpectRefused(mask, {"matrix-mask", "rows x cols", "overflows"}, "mask (2^62+1) x 4");
  EXPECT_EQ(dealer->next_seq(ItemType::kMatrixMask), 0u) << "a refused request used up a seq";
  // The left-side triple the attacker sends next names a mask that was never made.
  auto triple = dealer->Make(
      {.type = ItemType::kMatrixTriple, .mask_id = 0, .side = MaskSide::kLeft, .other = 4});
  ExpectRefused(triple, {"mask_id 0", "ask for the matrix mask first"}, "triple on mask #0");
  EXPECT_EQ(triple.error().code(), ErrorCode::kNotFound);
  ExpectServesAWellFormedMatrixTriple(*dealer);
}

TEST_P(DealerLimits, MatrixTriplesWhoseOtherDimensionOverflowsAreRefused) {
  auto dealer = Dealer::Create(GetParam(), TestSeed(41)).value();
  ASSERT_TRUE(dealer->Make({.type = ItemType::kMatrixMask, .rows = 4, .cols = 4}).ok());
  // 4 x 2^62 wraps to 0: before the fix B and C were empty and the product loop wrote
  // 4 x 2^62 elements into them.
  auto left = dealer->Make(
      {.type = ItemType::kMatrixTriple, .mask_id = 0, .side = MaskSide::kLeft, .other = kTwo62});
  ExpectRefused(left, {"matrix-triple", "cols x other", "overflows"}, "left, other 2^62");
  auto right = dealer->Make(
      {.type = ItemType::kMatrixTriple, .mask_id = 0, .side = MaskSide::kRight, .other = kTwo62});
  ExpectRefused(right, {"matrix-triple", "other x rows", "overflows"}, "right, other 2^62");
  // No overflow, but beyond the built-in bound.
  auto big = dealer->Make({.type = ItemType::kMatrixTriple,
                           .mask_id = 0,
                           .side = MaskSide::kLeft,
                           .other = std::uint64_t{1} << 40});
  ExpectRefused(big, {"cols x other", "exceeds the limit", "kMaxBatchElements"}, "other 2^40");
  auto zero = dealer->Make(
      {.type = ItemType::kMatrixTriple, .mask_id = 0, .side = MaskSide::kLeft, .other = 0});
  ExpectRefused(zero, {"other", "is 0"}, "other 0");
  EXPECT_EQ(dealer->next_seq(ItemType::kMatrixTriple), 0u);
  ExpectServesAWellFormedMatrixTriple(*dealer);
}

TEST_P(DealerLimits, MatricesWithAZeroDimensionAreRefused) {
  // 0 x 2^63 "is" 0 elements: before the fix the mask was made and a left triple with
  // other = 0 looped over its 2^63 rows.
  auto dealer = Dealer::Create(GetParam(), TestSeed(42)).value();
  ExpectRefused(dealer->Make({.type = ItemType::kMatrixMask, .rows = kTwo63, .cols = 0}),
                {"matrix-mask", "cols", "is 0"}, "2^63 x 0 mask");
  ExpectRefused(dealer->Make({.type = ItemType::kMatrixMask, .rows = 0, .cols = 7}),
                {"matrix-mask", "rows", "is 0"}, "0 x 7 mask");
  ExpectServesAWellFormedMatrixTriple(*dealer);
}

TEST_P(DealerLimits, OverflowingCountsAreRefusedForEveryItemType) {
  auto dealer = Dealer::Create(GetParam(), TestSeed(43)).value();
  // Counts whose batch size (components x count, or bytes) wraps or is absurd: 3 x
  // (2^64 + 2) / 3 wraps to 2, 2 x 2^63 to 0, 16 x 2^60 to 0.
  const std::uint64_t wraps3 = (~std::uint64_t{0}) / 3 + 1;  // (2^64 + 2) / 3
  struct Case {
    BatchRequest req;
    const char* what;
  };
  const std::vector<Case> cases = {
      {{.type = ItemType::kTriple, .count = wraps3}, "triple"},
      {{.type = ItemType::kSquare, .count = kTwo63}, "square"},
      {{.type = ItemType::kTrunc, .count = wraps3, .frac_bits = 16}, "trunc"},
      {{.type = ItemType::kBit, .count = std::uint64_t{1} << 60}, "bit"},
      {{.type = ItemType::kRandom, .count = ~std::uint64_t{0}}, "random"},
      {{.type = ItemType::kInputMask, .count = kTwo63, .owner = 1}, "input-mask"},
      {{.type = ItemType::kInputMask, .count = kTwo62, .owner = mpc::kClient}, "input-mask"},
  };
  for (const Case& c : cases) {
    auto out = dealer->Make(c.req);
    ExpectRefused(out, {c.what, "count", "exceeds the limit"}, c.what);
    EXPECT_EQ(dealer->next_seq(c.req.type), 0u) << c.what;
  }
  // The dealer still serves well-formed requests of each type.
  for (const Case& c : cases) {
    BatchRequest ok = c.req;
    ok.count = 100;
    auto out = dealer->Make(ok);
    EXPECT_TRUE(out.ok()) << c.what << ": " << out.error().ToString();
  }
  ExpectRefused(dealer->Make({.type = ItemType::kTrunc, .count = 10, .frac_bits = 64}),
                {"trunc", "frac_bits = 64"}, "trunc frac_bits 64");
  ExpectRefused(dealer->Make({.type = ItemType::kInputMask, .count = 10, .owner = 3}),
                {"input-mask", "owner 3"}, "input mask owner 3");
}

TEST_P(DealerLimits, ConfiguredLimitsBoundEveryItemTypeAndNameTheSetting) {
  BatchLimits limits;
  limits.max_items = 1000;
  limits.max_matrix_elements = 64;
  limits.items_setting = "items.setting";
  limits.matrix_setting = "matrix.setting";
  auto dealer = Dealer::Create(GetParam(), TestSeed(44), 3, limits).value();
  for (ItemType t : {ItemType::kTriple, ItemType::kSquare, ItemType::kBit, ItemType::kRandom}) {
    ExpectRefused(dealer->Make({.type = t, .count = 1001}),
                  {ItemTypeName(t), "count = 1001", "limit of 1000", "items.setting"},
                  ItemTypeName(t));
    EXPECT_TRUE(dealer->Make({.type = t, .count = 1000}).ok()) << ItemTypeName(t);
  }
  ExpectRefused(dealer->Make({.type = ItemType::kTrunc, .count = 1001, .frac_bits = 12}),
                {"trunc", "count", "items.setting"}, "trunc");
  ExpectRefused(dealer->Make({.type = ItemType::kInputMask, .count = 1001, .owner = 0}),
                {"input-mask", "count", "items.setting"}, "input mask");
  // A mask of 2^31 elements (the issue's 32 GiB allocation) and one just over the limit.
  ExpectRefused(dealer->Make({.type = ItemType::kMatrixMask, .rows = 1 << 15, .cols = 1 << 16}),
                {"rows x cols = 2147483648", "limit of 64", "matrix.setting"}, "2^31 mask");
  ExpectRefused(dealer->Make({.type = ItemType::kMatrixMask, .rows = 5, .cols = 13}),
                {"rows x cols = 65", "matrix.setting"}, "5 x 13 mask");
  ASSERT_TRUE(dealer->Make({.type = ItemType::kMatrixMask, .rows = 8, .cols = 8}).ok());
  // The triple's B and C count too: on the 8 x 8 mask, other = 9 makes B or C 72 elements.
  ExpectRefused(
      dealer->Make(
          {.type = ItemType::kMatrixTriple, .mask_id = 0, .side = MaskSide::kRight, .other = 9}),
      {"other x rows (B", "= 72", "matrix.setting"}, "right triple, other 9");
  ExpectRefused(
      dealer->Make(
          {.type = ItemType::kMatrixTriple, .mask_id = 0, .side = MaskSide::kLeft, .other = 9}),
      {"cols x other (B", "= 72", "matrix.setting"}, "left triple, other 9");
  ASSERT_TRUE(dealer->Make({.type = ItemType::kMatrixMask, .rows = 1, .cols = 64}).ok());
  // A 1 x 64 mask with other = 2 on the left: B is 64 x 2 = 128.
  ExpectRefused(
      dealer->Make(
          {.type = ItemType::kMatrixTriple, .mask_id = 1, .side = MaskSide::kLeft, .other = 2}),
      {"cols x other (B", "= 128"}, "left triple on 1 x 64, other 2");
  // ... and C: 64 x 1 mask, other = 2 on the left: B = 2, C = 128.
  ASSERT_TRUE(dealer->Make({.type = ItemType::kMatrixMask, .rows = 64, .cols = 1}).ok());
  ExpectRefused(
      dealer->Make(
          {.type = ItemType::kMatrixTriple, .mask_id = 2, .side = MaskSide::kLeft, .other = 2}),
      {"rows x other (C", "= 128", "matrix.setting"}, "left triple on 64 x 1, other 2");
  EXPECT_TRUE(
      dealer
          ->Make(
              {.type = ItemType::kMatrixTriple, .mask_id = 0, .side = MaskSide::kLeft, .other = 8})
          .ok());
}

// A party's store refuses a batch whose header claims a wrapping or oversized shape (it
// would expand it from its seed) before allocating anything.
// Attention triples (issue 11): every malformed request is refused naming what is wrong,
// uses up no sequence number, and a well-formed one round-trips through the wire format.
TEST_P(DealerLimits, MalformedAttentionTriplesAreRefused) {
  auto dealer = Dealer::Create(GetParam(), TestSeed(44)).value();
  ASSERT_TRUE(dealer->Make({.type = ItemType::kMatrixMask, .rows = 4, .cols = 6}).ok());  // #0
  ASSERT_TRUE(dealer->Make({.type = ItemType::kMatrixMask, .rows = 4, .cols = 5}).ok());  // #1
  const auto req = [](std::vector<std::uint64_t> masks, std::vector<std::uint64_t> lens,
                      std::uint64_t heads = 4, std::uint64_t hs = 3, std::uint64_t kv = 6) {
    return BatchRequest{.type = ItemType::kAttention,
                        .side = MaskSide::kRight,
                        .rows = hs,
                        .cols = kv,
                        .other = heads,
                        .masks = std::move(masks),
                        .lens = std::move(lens)};
  };
  ExpectRefused(dealer->Make(req({7}, {2})), {"block 0", "mask_id 7", "no matrix mask"},
                "unknown mask");
  ExpectRefused(dealer->Make(req({0, 1}, {4, 2})), {"block 1", "5 columns", "kv_dim is 6"},
                "mask of the wrong width");
  ExpectRefused(dealer->Make(req({0}, {5})), {"uses 5 rows", "block of 4"}, "too many rows");
  ExpectRefused(dealer->Make(req({0}, {0})), {"lens", "no rows"}, "empty block");
  ExpectRefused(dealer->Make(req({0, 0}, {1})), {"one length per block"}, "lens short");
  ExpectRefused(dealer->Make(req({}, {})), {"at least one block"}, "no block");
  ExpectRefused(dealer->Make(req({0}, {1}, 4, 4, 6)), {"multiple of the head size"},
                "kv_dim not a multiple of hs");
  ExpectRefused(dealer->Make(req({0}, {1}, 3, 3, 6)), {"multiple of the kv heads"},
                "heads not a multiple of kv heads");
  ExpectRefused(dealer->Make(req({0}, {1}, kTwo62, 3, 6)), {"n_heads x head size"},
                "heads overflow");
  BatchRequest list_on_triple{.type = ItemType::kTriple, .count = 1, .masks = {0}, .lens = {1}};
  ExpectRefused(dealer->Make(list_on_triple), {"only for attention triples"}, "list on a triple");
  EXPECT_EQ(dealer->next_seq(ItemType::kAttention), 0u);
  // Well-formed: 2 x 4 rows of one block, mix side; the batch parses back to itself.
  BatchRequest ok = req({0}, {4});
  ok.side = MaskSide::kLeft;
  auto made = dealer->Make(ok);
  ASSERT_TRUE(made.ok()) << made.error().ToString();
  for (const Batch& b : made->parties) {
    auto parsed = Batch::Parse(b.Serialize());
    ASSERT_TRUE(parsed.ok()) << parsed.error().ToString();
    EXPECT_EQ(parsed->request, ok);
    EXPECT_EQ(parsed->payload, b.payload);
    // A block list on another type, or cut short, is corrupt.
    std::vector<std::uint8_t> bytes = b.Serialize();
    bytes.resize(bytes.size() - b.payload.size() - 1);
    EXPECT_FALSE(Batch::Parse(bytes).ok());
  }
}

TEST(PartyStoreLimits, RefusesBatchesWithWrappingOrOversizedShapes) {
  auto dealer = Dealer::Create(Security::kMalicious, TestSeed(45)).value();
  auto good = dealer->Make({.type = ItemType::kMatrixMask, .rows = 2, .cols = 4}).value();
  PartyStore<mpc::Spdz2k> store(0, 3, dealer->party_seed(0));
  Batch bad = good.parties[0];
  bad.request.rows = kTwo62 + 1;  // (2^62 + 1) x 4 wraps to 4
  ExpectRefused(store.Accept(bad), {"rows x cols", "overflows"}, "wrapping mask batch");
  Batch tri = good.parties[0];
  tri.request = {.type = ItemType::kMatrixTriple,
                 .mask_id = 0,
                 .side = MaskSide::kLeft,
                 .rows = 4,
                 .cols = 4,
                 .other = kTwo62};
  ExpectRefused(store.Accept(tri), {"cols x other", "overflows"}, "wrapping triple batch");
  Batch count = good.parties[0];
  count.request = {.type = ItemType::kSquare, .count = kTwo63};
  ExpectRefused(store.Accept(count), {"square", "count"}, "2^63 squares batch");
  // Limits set on the store (a party sets its model's) bound what it accepts and asks for.
  BatchLimits limits;
  limits.max_matrix_elements = 4;
  limits.matrix_setting = "the model";
  store.set_limits(limits);
  ExpectRefused(store.Accept(good.parties[0]),
                {"rows x cols = 8 exceeds the limit of 4 (the model)"},
                "2 x 4 mask over a limit of 4");
  auto asked = store.GetMatrixMask(kTwo62 + 1, 4);
  ExpectRefused(asked, {"rows x cols", "overflows"}, "asking for a wrapping mask");
  store.set_limits({});
  EXPECT_TRUE(store.Accept(good.parties[0]).ok());  // nothing was used up by the refusals
  EXPECT_EQ(store.matrix_masks(2, 4), 1u);
}

// In-process: a party asking for a wrapping shape gets the refusal; the parties' other
// requests are still served.
TEST(InProcessDealerLimits, APartysBadRequestIsRefusedAndOthersAreServed) {
  auto d = InProcessDealer<mpc::SemiHonest>::Create(TestSeed(46)).value();
  auto bad = d->store(0).GetMatrixMask(kTwo62 + 1, 4);
  ExpectRefused(bad, {"rows x cols", "overflows"}, "party 0's wrapping mask");
  auto huge = d->store(1).GetTriples(std::size_t{1} << 40);
  ExpectRefused(huge, {"triple", "count", "exceeds the limit"}, "party 1's 2^40 triples");
  for (int p = 0; p < 3; ++p) {
    auto t = d->store(p).GetTriples(10);
    EXPECT_TRUE(t.ok()) << t.error().ToString();
    auto m = d->store(p).GetMatrixMask(2, 3);
    EXPECT_TRUE(m.ok()) << m.error().ToString();
  }
}

}  // namespace
}  // namespace mpcache::preproc
