// The sealed-bid exchange over an in-memory mesh (balancer/sealed_bids.h) and the session's
// balancer in a whole private generation (balancer/session_balancer.h): the auctions move
// the corrector role off a slow party, the tokens stay those of the static table, and a
// party that abstains, lies in its reveal, tells its peers different things or falls silent
// can neither corrupt the session nor stall it past the timeout.
#include "balancer/session_balancer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "balancer/sealed_bids.h"
#include "infer/in_process.h"
#include "infer/ring_model.h"
#include "model/synth.h"
#include "net/mem_mesh.h"
#include "net/run_parties.h"

namespace mpcache::balancer {
namespace {

constexpr int kParties = 3;

BidList Bids(std::uint64_t auction,
             const std::vector<std::pair<std::string, std::int64_t>>& units) {
  BidList l;
  l.auction = auction;
  for (auto& [phase, cost] : units) l.bids.push_back({mpc::WorkUnit{1, phase}, cost});
  return l;
}

TEST(BidCodec, RoundTripsAndRefusesMalformedLists) {
  const BidList l = Bids(7, {{"scores", 10}, {"softmax", 99}});
  auto back = DecodeBids(EncodeBids(l));
  ASSERT_TRUE(back.ok()) << back.error().ToString();
  EXPECT_EQ(*back, l);
  std::vector<std::uint8_t> b = EncodeBids(l);
  b.push_back(0);
  EXPECT_FALSE(DecodeBids(b).ok());  // trailing byte
  EXPECT_FALSE(DecodeBids(std::vector<std::uint8_t>(5, 0)).ok());
  const BidList twice = Bids(1, {{"x", 1}, {"x", 2}});
  auto dup = DecodeBids(EncodeBids(twice));
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.error().message().find("twice"), std::string::npos);
}

TEST(BaseLoad, IsTheOnlineTrafficTwiceAtThePricePerByteTheBidsState) {
  std::map<mpc::WorkUnit, mpc::UnitDemand> demand;
  demand[{0, "scores"}] = {.correction_bytes = 1000, .opened_bytes = 100};
  demand[{0, "softmax"}] = {.correction_bytes = 3000, .opened_bytes = 0};
  demand[{1, "mix"}] = {.correction_bytes = 0, .opened_bytes = 500};
  BidList bids;
  bids.bids = {{{0, "scores"}, 10}, {{0, "softmax"}, 30}, {{1, "mix"}, 999}, {{7, "ffn"}, 5000}};
  // 40 us for 4000 B (the bids for units without correction bytes, or unknown, do not
  // count): 0.01 us per byte; 600 B opened, sent and received: 12 us.
  EXPECT_EQ(BaseLoadUs(bids, demand, 600), 12);
  EXPECT_EQ(BaseLoadUs(bids, demand, 0), 0);
  EXPECT_EQ(BaseLoadUs(BidList{}, demand, 600), 0);  // no price stated: no base
  bids.bids[1].cost_us = -5;                         // out of range: left out as SecondPrice does
  EXPECT_EQ(BaseLoadUs(bids, demand, 600), 12);      // 10 us for 1000 B
  bids.bids[0].cost_us = kMaxBidMicros;
  EXPECT_EQ(BaseLoadUs(bids, demand, 1'000'000'000), kMaxBidMicros);  // capped
}

// The exchange at three parties of a MemMesh; `deviate[p]` is party p's deviation (or null);
// `silent` parties do not take part (they sleep past the others' timeout).
// `took[p]`: how long party p's exchange ran.
std::vector<Result<SealedBidsResult>> Exchange(
    const std::array<BidList, kParties>& bids,
    const std::array<const SealedBidsDeviation*, kParties>& deviate = {},
    std::vector<int> silent = {}, std::chrono::milliseconds timeout = std::chrono::seconds(20),
    std::array<std::chrono::steady_clock::duration, kParties>* took = nullptr) {
  auto mesh = net::MemMesh::Create(kParties, {.recv_timeout = timeout}).value();
  return net::RunParties(*mesh, [&](net::Channel& ch) -> Result<SealedBidsResult> {
    const int p = ch.self();
    const auto t0 = std::chrono::steady_clock::now();
    if (std::find(silent.begin(), silent.end(), p) != silent.end()) {
      std::this_thread::sleep_for(timeout * 5);
      return Internal("silent");
    }
    auto r = ExchangeSealedBids(ch, 3, bids[static_cast<std::size_t>(p)],
                                TestSeed(100 + static_cast<std::uint64_t>(p)),
                                deviate[static_cast<std::size_t>(p)]);
    if (took != nullptr)
      (*took)[static_cast<std::size_t>(p)] = std::chrono::steady_clock::now() - t0;
    return r;
  });
}

// The parties' balancer settings must be equal: a party whose static king is `split`
// (every party the king of a third of each opening) against two with none stops all three
// at the start, naming the field and both values.
TEST(BalancerSettings, ASplitKingAgainstNoneIsRefusedByName) {
  auto mesh = net::MemMesh::Create(kParties, {.recv_timeout = std::chrono::seconds(20)}).value();
  auto r = net::RunParties(*mesh, [&](net::Channel& ch) -> Status {
    BalancerSettings s;
    s.static_roles.king = ch.self() == 2 ? mpc::kSplitKing : mpc::kNoKing;
    return AgreeOnSettings(ch, s, "party" + std::to_string(ch.self()) + ".yaml");
  });
  // Every party stops; the first to find the difference names it (RunParties then aborts
  // the mesh under the others).
  int named = 0;
  for (int p = 0; p < kParties; ++p) {
    const Status& st = r[static_cast<std::size_t>(p)];
    ASSERT_FALSE(st.ok()) << "party " << p;
    const std::string& m = st.error().message();
    if (m.find("balancer.static_king") != std::string::npos &&
        m.find("split") != std::string::npos && m.find("none") != std::string::npos) {
      ++named;
    }
  }
  EXPECT_GE(named, 1);
  // All three split: agreed (a fresh mesh: a refusing party leaves a peer's message unread).
  auto mesh2 = net::MemMesh::Create(kParties, {.recv_timeout = std::chrono::seconds(20)}).value();
  auto ok = net::RunParties(*mesh2, [&](net::Channel& ch) -> Status {
    BalancerSettings s;
    s.static_roles.king = mpc::kSplitKing;
    return AgreeOnSettings(ch, s, "party.yaml");
  });
  for (const auto& st : ok) EXPECT_TRUE(st.ok()) << st.error().ToString();
}

TEST(SealedBids, HonestPartiesAllSeeEveryBid) {
  const std::array<BidList, kParties> bids{Bids(3, {{"a", 5}}), Bids(3, {{"a", 6}, {"b", 1}}),
                                           Bids(3, {})};
  auto r = Exchange(bids);
  for (int p = 0; p < kParties; ++p) {
    ASSERT_TRUE(r[static_cast<std::size_t>(p)].ok())
        << r[static_cast<std::size_t>(p)].error().ToString();
    const SealedBidsResult& s = *r[static_cast<std::size_t>(p)];
    for (int q = 0; q < kParties; ++q) {
      EXPECT_TRUE(s.valid[static_cast<std::size_t>(q)]) << s.why_not[static_cast<std::size_t>(q)];
      EXPECT_EQ(s.bids[static_cast<std::size_t>(q)], bids[static_cast<std::size_t>(q)]);
    }
  }
}

TEST(SealedBids, ARevealThatDoesNotMatchItsCommitmentIsExcludedEverywhere) {
  const std::array<BidList, kParties> bids{Bids(3, {{"a", 5}}), Bids(3, {{"a", 900}}),
                                           Bids(3, {{"a", 7}})};
  // Party 1 committed to 900, then (having seen the others' commitments, not their bids)
  // reveals 1 to win the unit.
  SealedBidsDeviation liar;
  liar.reveal_other_bids = true;
  liar.other = Bids(3, {{"a", 1}});
  auto r = Exchange(bids, {nullptr, &liar, nullptr});
  for (int p = 0; p < kParties; ++p) {
    ASSERT_TRUE(r[static_cast<std::size_t>(p)].ok())
        << r[static_cast<std::size_t>(p)].error().ToString();
    const SealedBidsResult& s = *r[static_cast<std::size_t>(p)];
    EXPECT_FALSE(s.valid[1]);
    EXPECT_NE(s.why_not[1].find("party 1's reveal does not match its commitment"),
              std::string::npos)
        << s.why_not[1];
    EXPECT_TRUE(s.valid[0] && s.valid[2]);
    EXPECT_TRUE(s.bids[1].bids.empty());
  }
  // A reveal that does not parse (under a matching commitment... of other bytes): excluded.
  SealedBidsDeviation garbage;
  garbage.garbage_reveal = true;
  r = Exchange(bids, {&garbage, nullptr, nullptr});
  for (const auto& x : r) {
    ASSERT_TRUE(x.ok()) << x.error().ToString();
    EXPECT_FALSE(x->valid[0]);
  }
}

TEST(SealedBids, APartyThatTellsItsPeersDifferentThingsVoidsTheExchange) {
  const std::array<BidList, kParties> bids{Bids(3, {{"a", 5}}), Bids(3, {{"a", 6}}),
                                           Bids(3, {{"a", 7}})};
  SealedBidsDeviation two_faced;
  two_faced.equivocate_to = 2;  // party 0 commits to other bids towards party 2
  const auto t0 = std::chrono::steady_clock::now();
  auto r = Exchange(bids, {&two_faced, nullptr, nullptr});
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  // Every honest party stops (the one that saw the difference, and the other through the
  // abort), none goes on with a table the others may not hold.
  for (int p : {1, 2}) {
    ASSERT_FALSE(r[static_cast<std::size_t>(p)].ok());
  }
  // The first party to compare the digests names the cause (any of the three: the
  // equivocator's peers disagree with each other too); the mesh's abort stops the others.
  std::string m;
  for (const auto& x : r) m += (x.ok() ? std::string("ok") : x.error().message()) + " | ";
  EXPECT_NE(m.find("told its peers different bids"), std::string::npos) << m;
}

TEST(SealedBids, ASilentPartyFailsTheExchangeAtTheTimeoutNotLater) {
  const std::array<BidList, kParties> bids{Bids(3, {{"a", 5}}), Bids(3, {{"a", 6}}),
                                           Bids(3, {{"a", 7}})};
  std::array<std::chrono::steady_clock::duration, kParties> took{};
  auto r = Exchange(bids, {}, {1}, std::chrono::milliseconds(300), &took);
  for (int p : {0, 2}) {
    const auto pi = static_cast<std::size_t>(p);
    ASSERT_FALSE(r[pi].ok());
    // The others stop at the timeout (the silent party sleeps 5 timeouts).
    EXPECT_LT(took[pi], std::chrono::milliseconds(1200)) << "party " << p;
  }
  EXPECT_NE(r[0].error().message().find('1'), std::string::npos) << r[0].error().ToString();
}

// ---- the session balancer in a whole generation ----

model::ModelWeights Synth() {
  auto config = model::ParseDims("32x2x4x2x64x40x32");
  EXPECT_TRUE(config.ok());
  config->shared_classifier = true;
  return model::MakeSyntheticWeights(*config, 7).value();
}

struct BalancedRun {
  Result<infer::InProcessResult> run = Internal("not run");
  std::array<std::vector<AuctionReport>, kParties> reports;
  std::array<std::uint64_t, kParties> dealer_bytes{};
};

// Runs a generation with a balancer at every party: party p prices a correction byte at
// price[p] (the "slow" party's is high), `deviation[p]` deviates.
BalancedRun RunBalanced(
    const std::array<double, kParties>& price, bool enabled = true,
    const std::array<const SessionBalancer::Deviation*, kParties>& deviation = {},
    bool count_online_traffic = true) {
  auto ring = infer::EncodeModel(Synth(), kRecommendedFracBits);
  EXPECT_TRUE(ring.ok());
  BalancedRun out;
  std::array<std::unique_ptr<SessionBalancer>, kParties> bal;
  std::mutex mu;
  BalancerSettings settings;
  settings.enabled = enabled;
  settings.reauction_interval_steps = 3;
  settings.count_online_traffic = count_online_traffic;
  infer::InProcessOptions o;
  o.seed = 5;
  infer::InProcessHook<mpc::Spdz2k> hook = [&](int party, int pos,
                                               infer::SecureLlama<mpc::Spdz2k>& e) -> Status {
    const auto pi = static_cast<std::size_t>(party);
    mpc::Context<mpc::Spdz2k>& ctx = e.context().arith();
    if (!bal[pi]) {
      const double mine = price[pi];
      MPCACHE_ASSIGN_OR_RETURN(
          bal[pi], SessionBalancer::Create(
                       ctx.channel(), ctx.roles(), settings, [mine] { return PartyPrices{mine}; },
                       TestSeed(900 + pi)));
      bal[pi]->set_deviation_for_testing(deviation[pi]);
    }
    MPCACHE_ASSIGN_OR_RETURN(auto report, bal[pi]->AfterPosition(pos, 3));
    if (report) {
      std::lock_guard<std::mutex> lock(mu);
      out.reports[pi].push_back(*report);
    }
    return Status::Ok();
  };
  out.run = infer::RunInProcess<mpc::Spdz2k>(*ring, {1, 5, 9}, 1, 10, o, hook);
  if (out.run.ok()) {
    for (int p = 0; p < kParties; ++p) {
      out.dealer_bytes[static_cast<std::size_t>(p)] =
          out.run->offline.bytes_to_party[static_cast<std::size_t>(p)];
    }
  }
  return out;
}

// The static table's run (balancer off), once for all the tests below.
const BalancedRun& Fixed() {
  static const BalancedRun* fixed = new BalancedRun(RunBalanced({1e-9, 1e-9, 1e-9}, false));
  return *fixed;
}

// The level L the loads would end at if the last interval's correction bytes were split
// continuously (water-filling): sum_p max(0, L - base_p) / price_p = their time at price 1.
double WaterLevelUs(const AuctionReport& r, const std::array<double, kParties>& price) {
  double bytes = 0;
  for (const std::uint64_t b : r.bytes) bytes += static_cast<double>(b);
  double lo = 0, hi = 1e12;
  for (int it = 0; it < 200; ++it) {
    const double mid = (lo + hi) / 2;
    double fits = 0;  // bytes the parties take below `mid`
    for (std::size_t p = 0; p < kParties; ++p) {
      fits += std::max(0.0, mid - static_cast<double>(r.base_us[p])) / (price[p] * 1e6);
    }
    (fits < bytes ? lo : hi) = mid;
  }
  return hi;
}

void ExpectSameOutcomeEverywhere(const BalancedRun& run) {
  ASSERT_EQ(run.reports[0].size(), 3u);
  for (int p = 1; p < kParties; ++p) {
    for (std::size_t a = 0; a < 3; ++a) {
      EXPECT_EQ(run.reports[static_cast<std::size_t>(p)][a].wins, run.reports[0][a].wins);
      EXPECT_EQ(run.reports[static_cast<std::size_t>(p)][a].load_us, run.reports[0][a].load_us);
      EXPECT_EQ(run.reports[static_cast<std::size_t>(p)][a].base_us, run.reports[0][a].base_us);
    }
  }
}

void PrintLast(const AuctionReport& last) {
  std::printf(
      "last auction: loads %lld %lld %lld us (online traffic %lld %lld %lld), spread %.3f, "
      "among winners %.3f, bytes %llu %llu %llu, opened %llu\n",
      static_cast<long long>(last.load_us[0]), static_cast<long long>(last.load_us[1]),
      static_cast<long long>(last.load_us[2]), static_cast<long long>(last.base_us[0]),
      static_cast<long long>(last.base_us[1]), static_cast<long long>(last.base_us[2]), last.spread,
      last.winners_spread, static_cast<unsigned long long>(last.bytes[0]),
      static_cast<unsigned long long>(last.bytes[1]),
      static_cast<unsigned long long>(last.bytes[2]),
      static_cast<unsigned long long>(last.online_bytes));
}

// A balanced run at `price`, checked against the static table's: the same tokens, and the
// auctions after positions 2 (the prompt's last), 5 and 8 with the same outcome everywhere.
BalancedRun RunAndCheck(const std::array<double, kParties>& price) {
  const BalancedRun& fixed = Fixed();
  EXPECT_TRUE(fixed.run.ok()) << fixed.run.error().ToString();
  BalancedRun run = RunBalanced(price);
  EXPECT_TRUE(run.run.ok()) << run.run.error().ToString();
  if (!fixed.run.ok() || !run.run.ok()) return run;
  EXPECT_EQ(run.run->tokens, fixed.run->tokens);
  ExpectSameOutcomeEverywhere(run);
  if (!run.reports[0].empty()) PrintLast(run.reports[0].back());
  return run;
}

TEST(SessionBalancer, AuctionsMoveTheCorrectionsOffASlowPartyAndChangeNoToken) {
  const BalancedRun& fixed = Fixed();
  const std::array<double, kParties> price{1e-9, 1e-9, 20e-9};
  const BalancedRun slow2 = RunAndCheck(price);
  ASSERT_TRUE(slow2.run.ok() && fixed.run.ok());
  ASSERT_EQ(slow2.reports[0].size(), 3u);
  const AuctionReport& last = slow2.reports[0].back();
  EXPECT_TRUE(last.applied);
  EXPECT_TRUE(last.excluded.empty());
  EXPECT_GT(last.online_bytes, 0u);
  // Party 2, 20 times dearer per byte, needs more time for its share of the online
  // traffic alone than parties 0 and 1 need for theirs plus every correction: it is left
  // none, and 0 and 1 end within max_spread (15%) of each other — units are auctioned in
  // 64 slices, so the few large ones no longer decide the spread — and within 15% of the
  // best any split of the bytes could do (the water level).
  // (Bids are whole microseconds, rounded up: the prices they state are within 1%.)
  EXPECT_NEAR(static_cast<double>(last.base_us[2]), 20.0 * static_cast<double>(last.base_us[0]),
              0.01 * static_cast<double>(last.base_us[2]));
  EXPECT_EQ(last.bytes[2], 0u);
  EXPECT_GT(last.bytes[0], 0u);
  EXPECT_GT(last.bytes[1], 0u);
  EXPECT_EQ(last.load_us[2], last.base_us[2]);
  EXPECT_LE(last.winners_spread, 0.15);
  const double level = WaterLevelUs(last, price);
  EXPECT_LE(static_cast<double>(std::max(last.load_us[0], last.load_us[1])), 1.15 * level)
      << "level " << level;
  EXPECT_GT(static_cast<double>(last.base_us[2]), level);
  // The static table sends every correction to party 2; the auctions to 0 and 1.
  EXPECT_GT(fixed.dealer_bytes[2], 4 * fixed.dealer_bytes[0]);
  EXPECT_LT(slow2.dealer_bytes[2], fixed.dealer_bytes[2] / 2);
  EXPECT_GT(slow2.dealer_bytes[0], 2 * fixed.dealer_bytes[0]);
  // Without base loads (the auction before them) party 2 is given a share of the
  // corrections on top of its online traffic, and finishes last.
  const BalancedRun no_base = RunBalanced(price, true, {}, false);
  ASSERT_TRUE(no_base.run.ok()) << no_base.run.error().ToString();
  EXPECT_GT(no_base.reports[0].back().bytes[2], 0u);
}

TEST(SessionBalancer, APartyThreeTimesDearerTakesWhatKeepsItLevelWithTheOthers) {
  const std::array<double, kParties> price{1e-9, 1e-9, 3e-9};
  const BalancedRun slow2 = RunAndCheck(price);
  ASSERT_TRUE(slow2.run.ok());
  ASSERT_EQ(slow2.reports[0].size(), 3u);
  const AuctionReport& last = slow2.reports[0].back();
  // Its online traffic is below the level: it takes corrections up to it, the least of the
  // three, and all three loads (online traffic included) end within 15%.
  EXPECT_GT(last.bytes[2], 0u);
  EXPECT_LT(last.bytes[2], last.bytes[0]);
  EXPECT_LT(last.bytes[2], last.bytes[1]);
  EXPECT_LE(last.spread, 0.15);
  EXPECT_EQ(last.spread, last.winners_spread);
  const double level = WaterLevelUs(last, price);
  EXPECT_LE(static_cast<double>(*std::max_element(last.load_us.begin(), last.load_us.end())),
            1.15 * level)
      << "level " << level;
}

TEST(SessionBalancer, APartyThatStopsBiddingIsLeftOutAndTheSessionGoesOn) {
  const BalancedRun& fixed = Fixed();
  ASSERT_TRUE(fixed.run.ok());
  SessionBalancer::Deviation quits;
  quits.abstain = true;
  const BalancedRun r = RunBalanced({1e-9, 1e-9, 1e-9}, true, {nullptr, &quits, nullptr});
  ASSERT_TRUE(r.run.ok()) << r.run.error().ToString();
  EXPECT_EQ(r.run->tokens, fixed.run->tokens);
  for (const AuctionReport& a : r.reports[0]) {
    EXPECT_EQ(a.wins[1], 0u) << "auction " << a.auction;
    EXPECT_GT(a.wins[0] + a.wins[2], 0u);
  }
}

TEST(SessionBalancer, APartyThatLiesInItsRevealIsExcludedAndCorruptsNothing) {
  const BalancedRun& fixed = Fixed();
  ASSERT_TRUE(fixed.run.ok());
  // Party 2 reveals a bid of 1 us for a unit it did not commit to that way.
  SessionBalancer::Deviation liar;
  liar.sealed.reveal_other_bids = true;
  liar.sealed.other.bids.push_back({mpc::WorkUnit{0, "norms"}, 1});
  const BalancedRun r = RunBalanced({1e-9, 1e-9, 1e-9}, true, {nullptr, nullptr, &liar});
  ASSERT_TRUE(r.run.ok()) << r.run.error().ToString();
  EXPECT_EQ(r.run->tokens, fixed.run->tokens);
  ASSERT_FALSE(r.reports[0].empty());
  for (const AuctionReport& a : r.reports[0]) {
    EXPECT_EQ(a.wins[2], 0u);
    ASSERT_EQ(a.excluded.size(), 1u);
    EXPECT_NE(a.excluded[0].find("party 2"), std::string::npos) << a.excluded[0];
  }
}

TEST(SessionBalancer, APartyThatTellsItsPeersDifferentBidsStopsTheSessionCleanly) {
  SessionBalancer::Deviation two_faced;
  two_faced.sealed.equivocate_to = 1;
  const auto t0 = std::chrono::steady_clock::now();
  const BalancedRun r = RunBalanced({1e-9, 1e-9, 1e-9}, true, {nullptr, nullptr, &two_faced});
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(60));
  ASSERT_FALSE(r.run.ok());
  EXPECT_NE(r.run.error().message().find("told its peers different bids"), std::string::npos)
      << r.run.error().ToString();
}

}  // namespace
}  // namespace mpcache::balancer
