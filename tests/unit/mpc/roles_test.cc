// The role table's split units (issue 13): a unit's correction requests dealt out by the
// slices each party won, deterministically, within one request of the shares in bytes.
#include "mpc/roles.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <random>
#include <vector>

namespace mpcache::mpc {
namespace {

const WorkUnit kUnit{-1, ""};  // the table's current unit with no layer and no phase bound

TEST(RoleTableSplit, RefusesASplitThatIsNotOneWeightPerPartyOrGivesNoneAny) {
  RoleTable t(3);
  Status s = t.Fill(RoleTable::StaticRoles(3), {{kUnit, Roles{kNoKing, 0, {1, 2}}}});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("2 weights, not one per party (3)"), std::string::npos)
      << s.error().message();
  s = t.Fill(RoleTable::StaticRoles(3), {{kUnit, Roles{kNoKing, 0, {0, 0, 0}}}});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("no party any weight"), std::string::npos);
  EXPECT_EQ(t.fills(), 0u);  // nothing changed
}

TEST(RoleTableSplit, EqualRequestsFollowTheWeightsExactlyAndSkipAZeroWeight) {
  RoleTable t(3);
  ASSERT_TRUE(t.Fill(RoleTable::StaticRoles(3), {{kUnit, Roles{kNoKing, 0, {48, 15, 1}}}}).ok());
  std::array<int, 3> got{};
  for (int i = 0; i < 640; ++i) ++got[static_cast<std::size_t>(t.CorrectorFor(1000))];
  EXPECT_EQ(got, (std::array<int, 3>{480, 150, 10}));
  ASSERT_TRUE(t.Fill(RoleTable::StaticRoles(3), {{kUnit, Roles{kNoKing, 0, {0, 3, 1}}}}).ok());
  got = {};
  for (int i = 0; i < 400; ++i) ++got[static_cast<std::size_t>(t.CorrectorFor(7))];
  EXPECT_EQ(got[0], 0);
  EXPECT_EQ(got[1] + got[2], 400);
  EXPECT_NEAR(got[2], 100, 1);
  // An unsplit unit: every request to its corrector.
  EXPECT_EQ(t.demand().at(kUnit).requests, 1040u);
  ASSERT_TRUE(t.Fill(Roles{kNoKing, 1, {}}).ok());
  for (int i = 0; i < 5; ++i) EXPECT_EQ(t.CorrectorFor(9), 1);
}

TEST(RoleTableSplit, UnequalRequestsStayWithinOneRequestOfTheSharesAndAgreeEverywhere) {
  std::mt19937_64 rng(3);
  std::uniform_int_distribution<std::uint64_t> size(1, 1 << 20);
  const std::vector<std::uint32_t> w{40, 23, 1};
  RoleTable a(3), b(3);
  ASSERT_TRUE(a.Fill(RoleTable::StaticRoles(3), {{kUnit, Roles{kNoKing, 0, w}}}).ok());
  ASSERT_TRUE(b.Fill(RoleTable::StaticRoles(3), {{kUnit, Roles{kNoKing, 0, w}}}).ok());
  std::array<double, 3> bytes{};
  double total = 0, largest = 0;
  for (int i = 0; i < 5000; ++i) {
    const std::uint64_t n = size(rng);
    const PartyId p = a.CorrectorFor(n);
    ASSERT_EQ(b.CorrectorFor(n), p) << "request " << i;  // the parties' tables agree
    bytes[static_cast<std::size_t>(p)] += static_cast<double>(n);
    total += static_cast<double>(n);
    largest = std::max(largest, static_cast<double>(n));
  }
  for (std::size_t p = 0; p < 3; ++p) {
    EXPECT_NEAR(bytes[p], total * w[p] / 64.0, 2 * largest) << "party " << p;
  }
}

TEST(RoleTableSplit, AShareBelowOneRequestPerFillIsServedAcrossFills) {
  // Party 2 is owed 1/64 of a unit that asks 4 times between auctions: credits carry over
  // the fills (one every 4 requests), so it is served once per 64 requests, not never.
  RoleTable t(3);
  std::array<int, 3> got{};
  for (int fill = 0; fill < 64; ++fill) {
    ASSERT_TRUE(t.Fill(RoleTable::StaticRoles(3), {{kUnit, Roles{kNoKing, 0, {40, 23, 1}}}}).ok());
    for (int i = 0; i < 4; ++i) ++got[static_cast<std::size_t>(t.CorrectorFor(4096))];
  }
  EXPECT_EQ(got[2], 4);
  EXPECT_EQ(got[0] + got[1] + got[2], 256);
}

}  // namespace
}  // namespace mpcache::mpc
