// The party's dealer client (RemotePreprocessing) against the real dealer session over
// in-memory links: three parties run a decode-shaped workload (KV-cache appends, scores and
// mixes under fixed-mask matrix triples, elementwise products, comparisons, MAC checks)
// for several steps. Checked: the results equal the plaintext twin; every party sends the
// same requests; and the requests the online phase waits for do not grow with the number of
// steps (everything after warm-up is asked for ahead of need).
#include <gtest/gtest.h>

#include <cstdio>
#include <thread>

#include "daemon/dealer_session.h"
#include "daemon/remote_preprocessing.h"
#include "infer/kv_cache.h"
#include "mpc/beaver.h"
#include "mpc/compare/binary_context.h"
#include "mpc/compare/compare.h"
#include "net/mem_mesh.h"
#include "net/run_parties.h"
#include "unit/daemon/mem_link.h"

namespace mpcache::daemon {
namespace {

using std::chrono::milliseconds;
using testing::MakeLinkPair;

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

struct PartyOutcome {
  std::vector<std::vector<std::uint64_t>> scores;  // per (step, layer), opened
  DealerTraffic traffic;
};

template <typename P>
Result<PartyOutcome> RunParty(net::Channel& ch, std::unique_ptr<MessageLink> link,
                              const dealer_proto::Join& join, int steps) {
  // As the party daemon does: nothing beyond the model's shapes is asked for or accepted.
  MPCACHE_ASSIGN_OR_RETURN(MatrixShapeLimits shapes, ShapeLimitsForModel(SmallConfig()));
  MPCACHE_ASSIGN_OR_RETURN(
      auto prep, RemotePreprocessing<P>::Open(std::move(link), join, milliseconds(20000), shapes));
  MPCACHE_ASSIGN_OR_RETURN(auto ctx,
                           mpc::Context<P>::Create(ch, prep->store(), TestSeed(10 + ch.self())));
  MPCACHE_ASSIGN_OR_RETURN(
      auto bctx, mpc::BinaryContext<P>::Create(*ctx, prep->bits(), TestSeed(20 + ch.self())));
  const model::ModelConfig c = SmallConfig();
  MPCACHE_ASSIGN_OR_RETURN(auto cache, infer::SecureKvCache<P>::Create(c, steps, 2));
  const std::size_t kv = static_cast<std::size_t>(c.kv_dim()),
                    dim = static_cast<std::size_t>(c.dim);
  PartyOutcome out;
  for (int s = 0; s < steps; ++s) {
    MPCACHE_ASSIGN_OR_RETURN([[maybe_unused]] auto step_plan, cache->Prepare(*ctx));
    for (int l = 0; l < c.n_layers; ++l) {
      std::vector<std::uint64_t> k(kv), v(kv), q(dim);
      for (std::size_t i = 0; i < kv; ++i) {
        k[i] = static_cast<std::uint64_t>(s + 1) * (i + 1) + static_cast<std::uint64_t>(l);
        v[i] = static_cast<std::uint64_t>(s) + i + 2 * static_cast<std::uint64_t>(l);
      }
      for (std::size_t i = 0; i < dim; ++i) q[i] = i % 5 + static_cast<std::uint64_t>(l) + 1;
      MPCACHE_RETURN_IF_ERROR(cache->Append(*ctx, l, mpc::PublicShares<P>(ctx->key(), k),
                                            mpc::PublicShares<P>(ctx->key(), v)));
      const model::KvPlan plan = cache->Plan(l);
      MPCACHE_ASSIGN_OR_RETURN(auto scores,
                               cache->Scores(*ctx, l, plan, mpc::PublicShares<P>(ctx->key(), q)));
      MPCACHE_ASSIGN_OR_RETURN(auto sq, mpc::Mul(*ctx, scores, scores));
      MPCACHE_ASSIGN_OR_RETURN(auto neg, mpc::LessThanZero(*bctx, mpc::Neg(sq)));
      MPCACHE_ASSIGN_OR_RETURN(auto mixed, cache->Mix(*ctx, l, plan, neg));
      MPCACHE_RETURN_IF_ERROR(mpc::CheckAllMacs(*bctx));
      MPCACHE_ASSIGN_OR_RETURN(auto opened, ctx->Open(scores));
      MPCACHE_ASSIGN_OR_RETURN(auto opened_mix, ctx->Open(mixed));
      opened.insert(opened.end(), opened_mix.begin(), opened_mix.end());
      out.scores.push_back(std::move(opened));
    }
  }
  MPCACHE_RETURN_IF_ERROR(mpc::CheckAllMacs(*bctx));
  out.traffic = prep->traffic();
  return out;
}

// Plaintext twin of one (step, layer): scores[h, t] = q_h . k_t(head h / group), then
// mix[h] = sum_t [scores[h, t]^2 > 0] v_t(head h / group).
std::vector<std::uint64_t> Plain(int s, int l) {
  const model::ModelConfig c = SmallConfig();
  const std::size_t hs = static_cast<std::size_t>(c.head_size());
  const std::size_t nh = static_cast<std::size_t>(c.n_heads);
  const std::size_t group = static_cast<std::size_t>(c.kv_group());
  const auto ul = static_cast<std::uint64_t>(l);
  auto q = [&](std::size_t i) { return i % 5 + ul + 1; };
  auto key = [&](int t, std::size_t i) { return static_cast<std::uint64_t>(t + 1) * (i + 1) + ul; };
  auto val = [&](int t, std::size_t i) { return static_cast<std::uint64_t>(t) + i + 2 * ul; };
  const std::size_t len = static_cast<std::size_t>(s) + 1;
  std::vector<std::uint64_t> scores(nh * len), mix(nh * hs, 0);
  for (std::size_t h = 0; h < nh; ++h) {
    const std::size_t g = h / group;
    for (int t = 0; t <= s; ++t) {
      std::uint64_t acc = 0;
      for (std::size_t i = 0; i < hs; ++i) acc += q(h * hs + i) * key(t, g * hs + i);
      scores[h * len + static_cast<std::size_t>(t)] = acc;
      for (std::size_t i = 0; i < hs; ++i) mix[h * hs + i] += val(t, g * hs + i);  // acc > 0
    }
  }
  scores.insert(scores.end(), mix.begin(), mix.end());
  return scores;
}

template <typename P>
std::vector<PartyOutcome> RunSession(int steps, const DealerLimits& limits = {}) {
  dealer_proto::Join join;
  join.session = 7;
  join.security = P::kMalicious ? preproc::Security::kMalicious : preproc::Security::kSemiHonest;
  join.prompt_len = 1;
  join.steps = static_cast<std::uint32_t>(steps);
  join.vocab = 16;
  auto session = DealerSession::Create(join, limits);
  EXPECT_TRUE(session.ok()) << session.error().ToString();
  std::vector<std::unique_ptr<MessageLink>> party_ends(3);
  std::vector<std::thread> dealers;
  for (int p = 0; p < 3; ++p) {
    auto [party_end, dealer_end] = MakeLinkPair();
    party_ends[static_cast<std::size_t>(p)] = std::move(party_end);
    dealers.emplace_back([p, d = std::move(dealer_end), s = *session]() mutable {
      auto j = d->Recv(milliseconds(20000));
      ASSERT_TRUE(j.ok());
      auto setup = s->SetupFor(p);
      ASSERT_TRUE(setup.ok());
      ASSERT_TRUE(d->Send(dealer_proto::Encode(*setup)).ok());
      Status st = ServeRequests(*d, *s, p, milliseconds(20000), nullptr);
      EXPECT_TRUE(st.ok()) << st.error().ToString();
    });
  }
  auto mesh = net::MemMesh::Create(3).value();
  auto results = net::RunParties(*mesh, [&](net::Channel& ch) {
    dealer_proto::Join mine = join;
    mine.party = static_cast<std::uint32_t>(ch.self());
    return RunParty<P>(ch, std::move(party_ends[static_cast<std::size_t>(ch.self())]), mine, steps);
  });
  for (auto& t : dealers) t.join();
  std::vector<PartyOutcome> out;
  for (auto& r : results) {
    EXPECT_TRUE(r.ok()) << r.error().ToString();
    if (r.ok()) out.push_back(std::move(*r));
  }
  return out;
}

template <typename P>
void CheckPrefetching() {
  const auto few = RunSession<P>(3), many = RunSession<P>(8);
  ASSERT_EQ(few.size(), 3u);
  ASSERT_EQ(many.size(), 3u);
  const int layers = SmallConfig().n_layers;
  for (const auto* run : {&few, &many}) {
    const DealerTraffic& t = (*run)[0].traffic;
    std::printf("party 0, %zu steps: %llu requests, %llu ahead of need, %llu waited for\n",
                (*run)[0].scores.size() / static_cast<std::size_t>(layers),
                static_cast<unsigned long long>(t.requests),
                static_cast<unsigned long long>(t.prefetched),
                static_cast<unsigned long long>(t.waited));
  }
  for (const auto& party : many) {
    ASSERT_EQ(party.scores.size(), std::size_t(8 * layers));
    for (int s = 0; s < 8; ++s) {
      for (int l = 0; l < layers; ++l) {
        EXPECT_EQ(party.scores[static_cast<std::size_t>(s * layers + l)], Plain(s, l))
            << "step " << s << " layer " << l;
      }
    }
  }
  for (int p = 1; p < 3; ++p) {
    EXPECT_EQ(many[p].traffic.requests, many[0].traffic.requests);
    EXPECT_EQ(many[p].traffic.waited, many[0].traffic.waited);
  }
  // Waits happen while the queues warm up; the five extra steps (each asking for dozens of
  // matrix triples, masks, triples and comparison chunks) are all served ahead of need.
  EXPECT_EQ(many[0].traffic.waited, few[0].traffic.waited);
  EXPECT_EQ(many[0].traffic.requests, many[0].traffic.prefetched + many[0].traffic.waited);
  EXPECT_GT(many[0].traffic.requests, few[0].traffic.requests + 5 * 2 * layers);
  EXPECT_GT(many[0].traffic.prefetched, many[0].traffic.requests / 2);
}

// A dealer serving small requests only (pool.capacity_items): the parties split what they
// need into requests it accepts, and the results are the same; an oversized request is
// refused with an error naming the limit.
TEST(RemotePreprocessing, NeedsAboveTheDealersRequestLimitAreSplit) {
  DealerLimits small;
  small.chunk_items = 64;
  small.max_request_items = 200;  // the parties round it down to 192
  // 8 steps: 288 comparisons (one comparison tuple each since issue 19; with 25 bit triples
  // each, 3 steps were enough to pass the limit), more than one request of 192 serves.
  const auto runs = RunSession<mpc::Spdz2k>(8, small);
  ASSERT_EQ(runs.size(), 3u);
  const int layers = SmallConfig().n_layers;
  for (int s = 0; s < 8; ++s) {
    for (int l = 0; l < layers; ++l) {
      EXPECT_EQ(runs[0].scores[static_cast<std::size_t>(s * layers + l)], Plain(s, l));
    }
  }
  EXPECT_GT(runs[0].traffic.requests, RunSession<mpc::Spdz2k>(8)[0].traffic.requests);

  dealer_proto::Join join;
  join.prompt_len = 1, join.steps = 4, join.vocab = 16;
  auto session = DealerSession::Create(join, small).value();
  auto big =
      Answer(*session, 0,
             dealer_proto::Encode(dealer_proto::BitRequest{preproc::BitItem::kBitTriple, 256}));
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().message().find("pool.capacity_items"), std::string::npos)
      << big.error().message();
  DealerLimits wrong;
  wrong.chunk_items = 1000, wrong.max_request_items = 10;
  EXPECT_FALSE(DealerSession::Create(join, wrong).ok());
}

TEST(RemotePreprocessing, MaliciousDecodeIsServedAheadOfNeed) {
  CheckPrefetching<mpc::Spdz2k>();
}
TEST(RemotePreprocessing, SemiHonestDecodeIsServedAheadOfNeed) {
  CheckPrefetching<mpc::SemiHonest>();
}

}  // namespace
}  // namespace mpcache::daemon
