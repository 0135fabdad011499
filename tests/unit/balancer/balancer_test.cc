// The auction's pure part (issue 13): the second-price rule, deterministic ties and
// exclusions, truthfulness against every misreport on a grid of random costs, the ledger,
// and the load-spread rule keeping a slowed party's load in step.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "balancer/auction.h"
#include "balancer/ledger.h"
#include "balancer/load_spread.h"

namespace mpcache::balancer {
namespace {

Outcome Auction(std::vector<Bid> bids, int n = 3, std::uint64_t key = 0) {
  auto r = SecondPrice(bids, n, key);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message());
  return r.ok() ? *r : Outcome{};
}

TEST(SecondPrice, LowestBidWinsAndIsPaidTheSecondLowest) {
  const Outcome o = Auction({{0, 500}, {1, 300}, {2, 800}});
  EXPECT_EQ(o.winner, 1);
  EXPECT_EQ(o.winning_bid_us, 300);
  EXPECT_EQ(o.price_us, 500);
  EXPECT_TRUE(o.excluded.empty());
}

TEST(SecondPrice, ALoneBidderIsPaidItsOwnBid) {
  const Outcome o = Auction({{2, 700}});
  EXPECT_EQ(o.winner, 2);
  EXPECT_EQ(o.price_us, 700);
}

TEST(SecondPrice, TheOutcomeDoesNotDependOnTheOrderOfTheBids) {
  std::vector<Bid> bids{{0, 40}, {1, 40}, {2, 90}, {3, 10}, {4, 40}};
  const Outcome first = Auction(bids, 5, 7);
  std::sort(bids.begin(), bids.end(), [](const Bid& a, const Bid& b) { return a.party < b.party; });
  do {
    const Outcome o = Auction(bids, 5, 7);
    ASSERT_EQ(o.winner, first.winner);
    ASSERT_EQ(o.price_us, first.price_us);
  } while (std::next_permutation(bids.begin(), bids.end(),
                                 [](const Bid& a, const Bid& b) { return a.party < b.party; }));
}

TEST(SecondPrice, TiesGoToTheUnitsRotatingOrderAndPayTheTiedBid) {
  // All equal: unit k prefers party k mod 3, so each party wins one unit in three.
  for (std::uint64_t key = 0; key < 6; ++key) {
    const Outcome o = Auction({{0, 100}, {1, 100}, {2, 100}}, 3, key);
    EXPECT_EQ(o.winner, static_cast<int>(key % 3)) << "unit " << key;
    EXPECT_EQ(o.price_us, 100);
  }
  // Two tied below a third: the rotation picks among the tied only.
  EXPECT_EQ(Auction({{0, 5}, {1, 9}, {2, 5}}, 3, 1).winner, 2);  // order 1, 2, 0
  EXPECT_EQ(Auction({{0, 5}, {1, 9}, {2, 5}}, 3, 0).winner, 0);
  EXPECT_EQ(TieRank(0, 1, 3), 2);
  EXPECT_EQ(TieRank(1, 1, 3), 0);
}

TEST(SecondPrice, InvalidBidsAreExcludedDeterministically) {
  // Party 1 bids twice (both dropped), party 7 does not exist, party 2 bids a negative cost,
  // party 3 one above the bound: only party 0 and 4 count.
  const Outcome o =
      Auction({{1, 1}, {0, 60}, {7, 2}, {1, 3}, {2, -5}, {3, kMaxBidMicros + 1}, {4, 80}}, 5, 0);
  EXPECT_EQ(o.winner, 0);
  EXPECT_EQ(o.price_us, 80);
  EXPECT_EQ(o.excluded, (std::vector<PartyId>{1, 2, 3, 7}));
  EXPECT_TRUE(SecondPrice(std::vector<Bid>{{0, kMaxBidMicros}}, 1, 0).ok());
}

TEST(SecondPrice, NoValidBidIsAnErrorNamingTheRule) {
  auto r = SecondPrice(std::vector<Bid>{{0, -1}, {5, 3}}, 3, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().message().find("no valid bid"), std::string::npos);
  EXPECT_FALSE(SecondPrice(std::vector<Bid>{}, 3, 0).ok());
  EXPECT_FALSE(SecondPrice(std::vector<Bid>{{0, 1}}, 0, 0).ok());
}

// A party's cost of one auction: its true cost when it wins, minus what it is paid.
std::int64_t NetCost(const Outcome& o, PartyId p, std::int64_t true_cost) {
  return o.winner == p ? true_cost - o.price_us : 0;
}

TEST(SecondPrice, MisreportingNeverLowersAPartysCost) {
  // Random true costs (ties included: a small range), every party, every misreport on a
  // grid spanning below and above every cost, and random unit keys.
  std::mt19937_64 rng(20261204);
  std::uniform_int_distribution<std::int64_t> cost(0, 20);
  int checked = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int n = 2 + static_cast<int>(trial % 4);
    std::vector<Bid> truth;
    truth.reserve(static_cast<std::size_t>(n));
    for (int p = 0; p < n; ++p) truth.push_back({p, cost(rng)});
    const std::uint64_t key = rng();
    const Outcome honest = Auction(truth, n, key);
    for (int p = 0; p < n; ++p) {
      const std::int64_t c = truth[static_cast<std::size_t>(p)].cost_us;
      for (std::int64_t lie = 0; lie <= 22; ++lie) {
        std::vector<Bid> bids = truth;
        bids[static_cast<std::size_t>(p)].cost_us = lie;
        const Outcome o = Auction(bids, n, key);
        ASSERT_LE(NetCost(honest, p, c), NetCost(o, p, c))
            << "trial " << trial << ": party " << p << " with cost " << c << " gains by bidding "
            << lie;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 20000);
}

TEST(CreditLedger, PaysTheWinnerFromTheRequestsAccountAndSumsToZero) {
  auto ledger = CreditLedger::Create(3);
  ASSERT_TRUE(ledger.ok());
  ASSERT_TRUE(ledger->Settle(Auction({{0, 500}, {1, 300}, {2, 800}})).ok());
  ASSERT_TRUE(ledger->Settle(Auction({{0, 200}, {1, 300}, {2, 800}})).ok());
  ASSERT_TRUE(ledger->Settle(Auction({{0, 900}, {1, 300}, {2, 800}})).ok());
  EXPECT_EQ(ledger->account(1).wins, 2U);
  EXPECT_EQ(ledger->account(1).received_us, 500 + 800);
  EXPECT_EQ(ledger->account(1).bid_us, 600);
  EXPECT_EQ(ledger->account(1).surplus_us(), 700);
  EXPECT_EQ(ledger->account(0).received_us, 300);
  EXPECT_EQ(ledger->account(2).wins, 0U);
  std::int64_t sum = ledger->requests_balance_us();
  for (int p = 0; p < 3; ++p) sum += ledger->account(p).received_us;
  EXPECT_EQ(sum, 0);
}

TEST(CreditLedger, RefusesWhatNoAuctionProducesAndOverflowChangingNothing) {
  auto ledger = CreditLedger::Create(2);
  ASSERT_TRUE(ledger.ok());
  Outcome bad;
  bad.winner = 2;
  EXPECT_EQ(ledger->Settle(bad).error().code(), ErrorCode::kInvalidArgument);
  bad.winner = 0;
  bad.winning_bid_us = 10;
  bad.price_us = 9;
  EXPECT_EQ(ledger->Settle(bad).error().code(), ErrorCode::kInvalidArgument);
  Outcome big;
  big.winner = 1;
  big.winning_bid_us = big.price_us = INT64_MAX / 2 + 1;
  ASSERT_TRUE(ledger->Settle(big).ok());
  EXPECT_EQ(ledger->Settle(big).error().code(), ErrorCode::kExhausted);
  EXPECT_EQ(ledger->account(1).wins, 1U);
  EXPECT_EQ(ledger->account(1).received_us, INT64_MAX / 2 + 1);
  EXPECT_FALSE(CreditLedger::Create(0).ok());
}

// Awards `units` units; party p's bid for each is costs[p] (its true per-unit time).
// `base` (empty: none) is each party's load before the first unit.
LoadSpreadAuction AwardAll(const std::vector<std::int64_t>& costs, int units, double max_spread,
                           std::vector<int>* wins, const std::vector<std::int64_t>& base = {}) {
  const int n = static_cast<int>(costs.size());
  auto a = base.empty() ? LoadSpreadAuction::Create(n, {.max_spread = max_spread})
                        : LoadSpreadAuction::Create(n, {.max_spread = max_spread}, base);
  EXPECT_TRUE(a.ok());
  wins->assign(static_cast<std::size_t>(n), 0);
  for (int u = 0; u < units; ++u) {
    std::vector<Bid> bids;
    bids.reserve(static_cast<std::size_t>(n));
    for (int p = 0; p < n; ++p) bids.push_back({p, costs[static_cast<std::size_t>(p)]});
    auto o = a->Award(bids, static_cast<std::uint64_t>(u));
    EXPECT_TRUE(o.ok());
    if (o.ok()) ++(*wins)[static_cast<std::size_t>(o->winner)];
  }
  return std::move(*a);
}

TEST(LoadSpread, EqualPartiesShareTheUnitsEvenly) {
  std::vector<int> wins;
  const auto a = AwardAll({1000, 1000, 1000}, 300, 0.15, &wins);
  EXPECT_EQ(wins, (std::vector<int>{100, 100, 100}));
  EXPECT_EQ(a.spread(), 0);
}

TEST(LoadSpread, ASlowedPartyGetsFewerUnitsAndTheLoadsStayWithin15Percent) {
  // Party 2 at half speed (its link or CPU cut): by cheapest bid alone it would never win
  // and parties 0 and 1 would carry everything; under the rule it takes its share of time.
  std::vector<int> wins;
  const auto a = AwardAll({1000, 1000, 2000}, 500, 0.15, &wins);
  EXPECT_LE(a.spread(), 0.15);
  EXPECT_GT(wins[2], 0);
  EXPECT_LT(wins[2], wins[0]);
  EXPECT_LT(wins[2], wins[1]);
  EXPECT_EQ(wins[0] + wins[1] + wins[2], 500);
  // Without the rule (the second-price auction alone) the slowed party never wins.
  for (std::uint64_t u = 0; u < 500; ++u) {
    EXPECT_NE(Auction({{0, 1000}, {1, 1000}, {2, 2000}}, 3, u).winner, 2);
  }
  // A looser bound lets the cheap parties run further ahead before the slow one is used.
  std::vector<int> loose_wins;
  const auto loose = AwardAll({1000, 1000, 2000}, 500, 1.0, &loose_wins);
  EXPECT_LT(loose_wins[2], wins[2]);
  EXPECT_GT(loose.spread(), 0.15);
}

TEST(LoadSpread, RandomCostsKeepTheSpreadBoundOnceLoadsExceedAUnit) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<std::int64_t> cost(500, 3000);
  for (int trial = 0; trial < 50; ++trial) {
    const std::vector<std::int64_t> costs{cost(rng), cost(rng), cost(rng)};
    std::vector<int> wins;
    const auto a = AwardAll(costs, 400, 0.15, &wins);
    // Whole units: the bound holds up to one unit of the slowest party.
    const std::int64_t hi = std::max({a.load_us(0), a.load_us(1), a.load_us(2)});
    const std::int64_t lo = std::min({a.load_us(0), a.load_us(1), a.load_us(2)});
    const std::int64_t unit = std::max({costs[0], costs[1], costs[2]});
    EXPECT_LE(static_cast<double>(hi - lo), 0.15 * static_cast<double>(hi) + unit)
        << "costs " << costs[0] << " " << costs[1] << " " << costs[2];
  }
}

TEST(LoadSpread, ACheapPartyDoesNotRunAheadByTheSlowPartysWholeUnit) {
  // Party 2 is 20x dearer. Measured from the best finish (the rule before slices), the
  // cheap parties could take units until they were 15% past party 2's load *plus its
  // whole unit* (20 of theirs); measured from the least loaded bidder, they stop 15% past
  // its load, and the loads end within 15% plus one cheap unit.
  for (const int units : {300, 301, 350, 420, 517}) {
    std::vector<int> wins;
    const auto a = AwardAll({1000, 1000, 20000}, units, 0.15, &wins);
    const std::int64_t hi = std::max({a.load_us(0), a.load_us(1), a.load_us(2)});
    const std::int64_t lo = std::min({a.load_us(0), a.load_us(1), a.load_us(2)});
    std::printf("%d units: loads %lld %lld %lld\n", units, static_cast<long long>(a.load_us(0)),
                static_cast<long long>(a.load_us(1)), static_cast<long long>(a.load_us(2)));
    EXPECT_GT(wins[2], 0) << units;
    EXPECT_LE(static_cast<double>(hi), 1.15 * static_cast<double>(lo) + 1000) << units;
  }
}

TEST(LoadSpread, APartyWhoseBaseLoadIsAboveWhereTheOthersEndWinsNothing) {
  // Party 2 carries 400 ms of work whatever it wins (its online traffic on a slow link);
  // the 300 units (300 ms at anyone's price) fit below that at parties 0 and 1. Without the
  // base it would take its third.
  std::vector<int> wins;
  const auto a = AwardAll({1000, 1000, 1000}, 300, 0.15, &wins, {0, 0, 400000});
  EXPECT_EQ(wins[2], 0);
  EXPECT_EQ(wins[0] + wins[1], 300);
  EXPECT_EQ(a.base_us(2), 400000);
  EXPECT_EQ(a.load_us(2), 400000);
  EXPECT_EQ(a.load_us(0), 1000 * wins[0]);
  // The two that took the work end within 15% (plus a unit) of each other; the spread of
  // all three loads shows party 2's base.
  EXPECT_LE(a.winners_spread(), 0.15);
  const auto lo = static_cast<double>(std::min(a.load_us(0), a.load_us(1)));
  EXPECT_NEAR(a.spread(), (400000.0 - lo) / 400000.0, 1e-12);
  EXPECT_GT(a.spread(), 0.5);
  std::vector<int> flat;
  (void)AwardAll({1000, 1000, 1000}, 300, 0.15, &flat);
  EXPECT_EQ(flat, (std::vector<int>{100, 100, 100}));
}

TEST(LoadSpread, BaseLoadsBelowTheLevelAreFilledUpToIt) {
  // Bases 0, 50 and 100 ms and 300 units of 1 ms: the level is 150 ms, so the parties take
  // 150, 100 and 50 units and end within 15% (plus a unit) of each other.
  std::vector<int> wins;
  const auto a = AwardAll({1000, 1000, 1000}, 300, 0.15, &wins, {0, 50000, 100000});
  EXPECT_EQ(wins[0] + wins[1] + wins[2], 300);
  EXPECT_GT(wins[0], wins[1]);
  EXPECT_GT(wins[1], wins[2]);
  EXPECT_GT(wins[2], 0);
  const std::int64_t hi = std::max({a.load_us(0), a.load_us(1), a.load_us(2)});
  const std::int64_t lo = std::min({a.load_us(0), a.load_us(1), a.load_us(2)});
  EXPECT_LE(static_cast<double>(hi), 1.15 * static_cast<double>(lo) + 1000);
  EXPECT_EQ(a.spread(), a.winners_spread());
  // Random prices and bases. At a party's last win its finish was at most the limit then:
  // max(best finish, 1.15 x least load), and loads only grow, so every winner ends within
  // max(1.15 x, + the dearest unit) of the least final load; a party that wins nothing was
  // passed over only because its base was high: every winner ends within max(1.15 x, + its
  // unit) of that base.
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<std::int64_t> cost(500, 3000), base(0, 600000);
  for (int trial = 0; trial < 50; ++trial) {
    const std::vector<std::int64_t> costs{cost(rng), cost(rng), cost(rng)};
    const std::vector<std::int64_t> bases{base(rng), base(rng), base(rng)};
    std::vector<int> w;
    const auto r = AwardAll(costs, 400, 0.15, &w, bases);
    const auto least = static_cast<double>(std::min({r.load_us(0), r.load_us(1), r.load_us(2)}));
    const auto dearest = static_cast<double>(std::max({costs[0], costs[1], costs[2]}));
    for (int p = 0; p < 3; ++p) {
      const auto pi = static_cast<std::size_t>(p);
      const auto load = static_cast<double>(r.load_us(p));
      if (w[pi] > 0) {
        EXPECT_LE(load, std::max(1.15 * least, least + dearest)) << "trial " << trial << " " << p;
        continue;
      }
      EXPECT_EQ(r.load_us(p), bases[pi]);
      const auto b = static_cast<double>(bases[pi]);
      for (int q = 0; q < 3; ++q) {
        if (w[static_cast<std::size_t>(q)] == 0) continue;
        EXPECT_LE(static_cast<double>(r.load_us(q)),
                  std::max(1.15 * b, b + static_cast<double>(costs[pi])))
            << "trial " << trial << ": party " << p << " won nothing, party " << q;
      }
    }
  }
}

TEST(LoadSpread, InvalidOptionsAndBidsAreRefusedChangingNothing) {
  const std::vector<std::int64_t> negative{0, -1, 0};
  const auto bad = LoadSpreadAuction::Create(3, {}, negative);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().ToString().find("party 1's base load is negative"), std::string::npos)
      << bad.error().ToString();
  const std::vector<std::int64_t> two{0, 0};
  EXPECT_FALSE(LoadSpreadAuction::Create(3, {}, two).ok());
  EXPECT_FALSE(LoadSpreadAuction::Create(3, {.max_spread = -0.1}).ok());
  EXPECT_FALSE(LoadSpreadAuction::Create(3, {.max_spread = 11}).ok());
  EXPECT_FALSE(LoadSpreadAuction::Create(0).ok());
  auto a = LoadSpreadAuction::Create(3);
  ASSERT_TRUE(a.ok());
  EXPECT_FALSE(a->Award(std::vector<Bid>{{0, -1}}, 0).ok());
  EXPECT_EQ(a->load_us(0), 0);
  // An excluded (duplicate) bidder is neither eligible nor charged load.
  auto o = a->Award(std::vector<Bid>{{0, 1}, {0, 2}, {1, 50}}, 0);
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->winner, 1);
  EXPECT_EQ(o->excluded, (std::vector<PartyId>{0}));
  EXPECT_EQ(a->load_us(1), 50);
}

}  // namespace
}  // namespace mpcache::balancer
