// Issue 10, the party's side: a party asks the dealer for no matrix item beyond what its
// model can need (ShapeLimitsForModel), and accepts from the dealer only the exact batch
// it asked for (a wrapping or bigger shape is refused before it is expanded), including
// the Setup's client mask batches. The dealer end here is scripted: its answers are queued
// on an in-memory link before the party reads them.
#include <gtest/gtest.h>

#include <string>

#include "daemon/dealer_session.h"
#include "daemon/remote_preprocessing.h"
#include "preproc/dealer.h"
#include "unit/daemon/mem_link.h"

namespace mpcache::daemon {
namespace {

using mpc::MaskSide;
using preproc::Batch;
using preproc::ItemType;
using std::chrono::milliseconds;
using P = mpc::Spdz2k;

model::ModelConfig SmallConfig() {
  model::ModelConfig c;
  c.dim = 32;
  c.hidden_dim = 64;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.vocab_size = 16;
  c.seq_len = 16;
  return c;
}

dealer_proto::Join PartyJoin(std::uint32_t prompt_len) {
  dealer_proto::Join j;
  j.session = 11;
  j.party = 0;
  j.security = preproc::Security::kMalicious;
  j.prompt_len = prompt_len;
  j.steps = 2;
  j.vocab = 16;
  return j;
}

// Party 0's RemotePreprocessing, opened against a real Setup of a dealer session for
// `dealer_join`; `dealer` is the dealer's end of the link (answers are queued on it).
struct Opened {
  std::unique_ptr<testing::MemLink> dealer;
  Result<std::unique_ptr<RemotePreprocessing<P>>> prep = Internal("not opened");
};
Opened Open(const dealer_proto::Join& party_join, const dealer_proto::Join& dealer_join,
            MatrixShapeLimits shapes = {}) {
  auto [party_end, dealer_end] = testing::MakeLinkPair();
  auto session = DealerSession::Create(dealer_join).value();
  EXPECT_TRUE(dealer_end->Send(dealer_proto::Encode(session->SetupFor(0).value())).ok());
  Opened o;
  o.prep = RemotePreprocessing<P>::Open(std::move(party_end), party_join, milliseconds(2000),
                                        std::move(shapes));
  if (o.prep.ok()) {
    EXPECT_TRUE(dealer_end->Recv(milliseconds(0)).ok());  // the Join
  }
  o.dealer = std::move(dealer_end);
  return o;
}

// Party 0's part of batch #0 of `req` made by a fresh dealer (empty payload).
Batch PartOfParty0(const preproc::BatchRequest& req) {
  auto d = preproc::Dealer::Create(preproc::Security::kMalicious, TestSeed(50)).value();
  if (req.type == ItemType::kMatrixTriple) {
    EXPECT_TRUE(d->Make({.type = ItemType::kMatrixMask, .rows = req.rows, .cols = req.cols}).ok());
  }
  return d->Make(req).value().parties[0];
}

template <typename T>
void ExpectRefused(const Result<T>& r, std::initializer_list<const char*> words,
                   const std::string& what) {
  ASSERT_FALSE(r.ok()) << what << ": accepted";
  for (const char* w : words) {
    EXPECT_NE(r.error().message().find(w), std::string::npos)
        << what << ": \"" << r.error().message() << "\" does not name \"" << w << "\"";
  }
}

TEST(PartyLimits, ABatchOtherThanTheOneAskedForIsRefused) {
  {  // A 3 x 4 mask for a 2 x 4 request.
    Opened o = Open(PartyJoin(1), PartyJoin(1));
    ASSERT_TRUE(o.prep.ok()) << o.prep.error().ToString();
    ASSERT_TRUE(o.dealer
                    ->Send(dealer_proto::EncodeBatch(
                        PartOfParty0({.type = ItemType::kMatrixMask, .rows = 3, .cols = 4})))
                    .ok());
    ExpectRefused((*o.prep)->store().GetMatrixMask(2, 4),
                  {"matrix-mask 2 x 4 #0", "matrix-mask 3 x 4 #0"}, "3 x 4 for 2 x 4");
  }
  {  // Five triples for the party's request of a chunk.
    Opened o = Open(PartyJoin(1), PartyJoin(1));
    ASSERT_TRUE(o.prep.ok()) << o.prep.error().ToString();
    ASSERT_TRUE(
        o.dealer
            ->Send(dealer_proto::EncodeBatch(PartOfParty0({.type = ItemType::kTriple, .count = 5})))
            .ok());
    ExpectRefused((*o.prep)->store().GetTriples(10), {"triple x 5 #0"}, "5 triples");
  }
  {  // A left-side triple claiming the wrapping (2^62 + 1) x 4 mask shape.
    Opened o = Open(PartyJoin(1), PartyJoin(1));
    ASSERT_TRUE(o.prep.ok()) << o.prep.error().ToString();
    ASSERT_TRUE(o.dealer
                    ->Send(dealer_proto::EncodeBatch(
                        PartOfParty0({.type = ItemType::kMatrixMask, .rows = 2, .cols = 4})))
                    .ok());
    auto mask = (*o.prep)->store().GetMatrixMask(2, 4);
    ASSERT_TRUE(mask.ok()) << mask.error().ToString();
    // Taking it asked ahead for the next 2 x 4 mask (#1): answered first, as asked.
    Batch next = PartOfParty0({.type = ItemType::kMatrixMask, .rows = 2, .cols = 4});
    next.seq = 1;
    ASSERT_TRUE(o.dealer->Send(dealer_proto::EncodeBatch(next)).ok());
    Batch wrapping = PartOfParty0({.type = ItemType::kMatrixTriple,
                                   .mask_id = 0,
                                   .side = MaskSide::kLeft,
                                   .rows = 2,
                                   .cols = 4,
                                   .other = 1});
    wrapping.request.rows = (std::uint64_t{1} << 62) + 1;
    ASSERT_TRUE(o.dealer->Send(dealer_proto::EncodeBatch(wrapping)).ok());
    ExpectRefused((*o.prep)->store().GetMatrixTriple(mask->id, MaskSide::kLeft, 1),
                  {"matrix-triple (mask #0 of 2 x 4, left, other 1) #0",
                   "mask #0 of 4611686018427387905 x 4"},
                  "wrapping triple");
  }
}

TEST(PartyLimits, SetupClientBatchesMustHaveTheJoinsSizes) {
  // The dealer's session was made for a 2-token prompt, the party's Join says 1.
  Opened o = Open(PartyJoin(1), PartyJoin(2));
  ExpectRefused(o.prep, {"input-mask x 16 (owner -1) #0", "input-mask x 32 (owner -1) #0"},
                "a prompt mask batch of the wrong size");
}

TEST(PartyLimits, APartyAsksForNothingBeyondItsModel) {
  auto shapes = ShapeLimitsForModel(SmallConfig());
  ASSERT_TRUE(shapes.ok()) << shapes.error().ToString();
  // The biggest matrix is w13 (2 hidden x dim = 128 x 32); other is at most n_heads.
  EXPECT_EQ(shapes->max_elements, 4096u);
  EXPECT_EQ(shapes->max_dim, 128u);
  EXPECT_EQ(shapes->max_other, 4u);
  Opened o = Open(PartyJoin(1), PartyJoin(1), *shapes);
  ASSERT_TRUE(o.prep.ok()) << o.prep.error().ToString();
  auto& store = (*o.prep)->store();
  ExpectRefused(store.GetMatrixMask((std::uint64_t{1} << 62) + 1, 4),
                {"rows x cols", "overflows", "at most 4096", "dim 32, hidden 64"},
                "(2^62+1) x 4 mask");
  ExpectRefused(store.GetMatrixMask(129, 1),
                {"refusing to ask the dealer", "rows exceeds 128", "dim 32, hidden 64"},
                "129 x 1 mask");
  ExpectRefused(store.GetMatrixMask(100, 100),
                {"rows x cols = 10000 exceeds the limit of 4096", "the model's shapes"},
                "100 x 100 mask");
  ExpectRefused(store.GetMatrixTriple(0, MaskSide::kRight, 5),
                {"refusing to ask the dealer", "other exceeds 4"}, "triple, other 5");
  EXPECT_FALSE(o.dealer->Recv(milliseconds(0)).ok()) << "a refused request was sent";
  // What the model uses is asked for.
  ASSERT_TRUE(o.dealer
                  ->Send(dealer_proto::EncodeBatch(
                      PartOfParty0({.type = ItemType::kMatrixMask, .rows = 128, .cols = 32})))
                  .ok());
  EXPECT_TRUE(store.GetMatrixMask(128, 32).ok());
}

// The sigmoid eviction's window queries scatter their sigmoids with the weights: the
// scatter triples' other doubles (2 n_heads cs), and only then.
TEST(PartyLimits, SigmoidEvictionDoublesTheScatterRows) {
  model::MpcachePolicy policy;
  policy.cluster_tokens = 8;
  policy.static_keep_ratio = 0.6;
  auto softmax = ShapeLimitsForModel(SmallConfig(), policy);
  ASSERT_TRUE(softmax.ok()) << softmax.error().ToString();
  EXPECT_EQ(softmax->max_other, 32u);  // n_heads cs = 2 kv = 32
  policy.eviction_score = model::EvictionScore::kSigmoid;
  auto sigmoid = ShapeLimitsForModel(SmallConfig(), policy);
  ASSERT_TRUE(sigmoid.ok()) << sigmoid.error().ToString();
  EXPECT_EQ(sigmoid->max_other, 64u);
  // Impact re-weighting gathers the importance with [K | V]: 2 kv + 1.
  policy.cluster_tokens = 2;
  policy.impact_weight = 2;
  auto impact = ShapeLimitsForModel(SmallConfig(), policy);
  ASSERT_TRUE(impact.ok()) << impact.error().ToString();
  EXPECT_EQ(impact->max_other, 33u);
}

TEST(PartyLimits, Llama2_7BShapes) {
  model::ModelConfig c;
  c.dim = 4096, c.hidden_dim = 11008, c.n_layers = 32, c.n_heads = 32, c.n_kv_heads = 32;
  c.vocab_size = 32000, c.seq_len = 4096;
  auto shapes = ShapeLimitsForModel(c).value();
  EXPECT_EQ(shapes.max_elements, 32000u * 4096u);  // the embedding
  EXPECT_EQ(shapes.max_dim, 32000u);
  EXPECT_EQ(shapes.max_other, 32u);
  // MPCache's gather and scatter triples: other = n_heads x cluster_tokens; the rest fits.
  model::MpcachePolicy policy;
  policy.cluster_tokens = 16;
  auto with = ShapeLimitsForModel(c, policy).value();
  EXPECT_EQ(with.max_other, 32u * 16u);
  EXPECT_EQ(with.max_elements, 32000u * 4096u);
  EXPECT_EQ(with.max_dim, 32000u);
  // Level 2: the first gather carries the s = 4 sub-scores too.
  policy.level2_tokens = 4;
  policy.residual = true;
  auto two = ShapeLimitsForModel(c, policy).value();
  EXPECT_EQ(two.max_other, 32u * 16u + 4u);
  EXPECT_NE(two.source.find("sub-clusters of 4"), std::string::npos) << two.source;
  c.n_heads = 0;
  EXPECT_FALSE(ShapeLimitsForModel(c).ok());
}

}  // namespace
}  // namespace mpcache::daemon
