// The parties' agreement on the next request (daemon/session_order.h): the pure choice, and
// one lobby round over an in-memory mesh, with honest and lying peers.
#include "daemon/session_order.h"

#include <gtest/gtest.h>

#include <array>
#include <limits>

#include "net/mem_mesh.h"
#include "net/run_parties.h"

namespace mpcache::daemon {
namespace {

using Ids = std::vector<std::uint64_t>;

TEST(SessionOrder, TheLeadersArrivalOrderAmongRequestsEveryoneHas) {
  // Three parties received three clients in three different orders.
  const Ids leader{30, 10, 20};
  EXPECT_EQ(ChooseNext(leader, {Offer{{10, 20, 30}, {}}, Offer{{20, 30, 10}, {}}}), 30u);
  // 30 has not reached party 2 yet: the next the leader has that both followers have.
  EXPECT_EQ(ChooseNext(leader, {Offer{{10, 20, 30}, {}}, Offer{{20, 10}, {}}}), 10u);
  EXPECT_EQ(ChooseNext(leader, {Offer{{40}, {}}, Offer{{10, 20, 30}, {}}}), 0u);
  EXPECT_EQ(ChooseNext({}, {Offer{{1}, {}}, Offer{{1}, {}}}), 0u);
  // The reserved ids are never picked, whoever offers them.
  EXPECT_EQ(ChooseNext({0, kLobbySession, 5},
                       {Offer{{0, kLobbySession, 5}, {}}, Offer{{kLobbySession, 0, 5}, {}}}),
            5u);
}

TEST(SessionOrder, WhatOnePartyRefusedIsDroppedEverywhere) {
  // Party 1 refused 7 (its client got the answer); party 0 served or refused 9.
  const std::vector<Offer> followers{Offer{{8}, {7}}, Offer{{7, 8, 9}, {}}};
  EXPECT_EQ(DropsFor({9}, followers), (Ids{7, 9}));
  EXPECT_EQ(DropsFor({}, {Offer{{1}, {}}, Offer{{2}, {}}}), Ids{});
}

std::unique_ptr<net::MemMesh> Mesh() {
  auto mesh = net::MemMesh::Create(3);
  EXPECT_TRUE(mesh.ok());
  return std::move(mesh).value();
}

TEST(SessionOrder, ARoundAgreesOnOneRequestAndTheDrops) {
  auto mesh = Mesh();
  // Party 0 has 7, 8, 9 (7 first); party 1 refused 7 (its limit), so 8 is served next, and
  // party 2 drops its 7.
  const std::array<Offer, 3> offers{Offer{{7, 8, 9}, {}}, Offer{{9, 8}, {7}}, Offer{{8, 7, 9}, {}}};
  auto results = net::RunParties(*mesh, [&](net::Channel& ch) {
    return RunLobbyRound(ch, offers[static_cast<std::size_t>(ch.self())]);
  });
  for (auto& r : results) {
    ASSERT_TRUE(r.ok()) << r.error().ToString();
    EXPECT_EQ(r->pick.session, 8u);
    EXPECT_EQ(r->pick.drop, Ids{7});
  }
  ASSERT_EQ(results[0]->offers.size(), 2u);
  EXPECT_EQ(results[0]->offers[0].gone, Ids{7});
  // Bytes: each follower's offer (8 + 8 per id) and the leader's pick (12 + 8 per drop).
  EXPECT_EQ(mesh->party(1).stats().Total().bytes_sent, 8u + 3 * 8);
  EXPECT_EQ(mesh->party(2).stats().Total().bytes_sent, 8u + 3 * 8);
  EXPECT_EQ(mesh->party(0).stats().Total().bytes_sent, 2 * (12u + 8));
}

TEST(SessionOrder, NothingInCommonPicksNothing) {
  auto mesh = Mesh();
  const std::array<Offer, 3> offers{Offer{{1}, {}}, Offer{{2}, {}}, Offer{{1}, {}}};
  auto results = net::RunParties(*mesh, [&](net::Channel& ch) {
    return RunLobbyRound(ch, offers[static_cast<std::size_t>(ch.self())]);
  });
  for (auto& r : results) {
    ASSERT_TRUE(r.ok()) << r.error().ToString();
    EXPECT_EQ(r->pick.session, 0u);
  }
}

void PutU32(std::vector<std::uint8_t>& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
void PutU64(std::vector<std::uint8_t>& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

TEST(SessionOrder, AFollowerAnnouncingHugeListsIsRefusedBeforeAnythingIsAllocated) {
  // Attacker: party 2 says it has 2^32-1 queued ids (32 GiB), to make the leader allocate.
  auto mesh = Mesh();
  auto results = net::RunParties(*mesh, [&](net::Channel& ch) -> Result<LobbyResult> {
    if (ch.self() == 2) {
      std::vector<std::uint8_t> head;
      PutU32(head, std::numeric_limits<std::uint32_t>::max());
      PutU32(head, 0);
      MPCACHE_RETURN_IF_ERROR(ch.Send(0, head));
      MPCACHE_RETURN_IF_ERROR(ch.Flush());
      return LobbyResult{};
    }
    return RunLobbyRound(ch, Offer{{5}, {}});
  });
  ASSERT_FALSE(results[0].ok());
  EXPECT_EQ(results[0].error().code(), ErrorCode::kProtocol);
  EXPECT_NE(results[0].error().message().find("party 2 announced 4294967295 session ids"),
            std::string::npos)
      << results[0].error().message();
}

TEST(SessionOrder, ALeaderPickingARequestAFollowerNeverQueuedIsRefused) {
  // Attacker: party 0 picks session 99, which party 1's clients never sent it: party 1 must
  // not set up (and serve) a session it did not accept from a client.
  auto mesh = Mesh();
  auto results = net::RunParties(*mesh, [&](net::Channel& ch) -> Result<LobbyResult> {
    if (ch.self() == 0) {
      std::array<std::uint8_t, 16> skip{};
      for (net::PartyId p = 1; p < 3; ++p) MPCACHE_RETURN_IF_ERROR(ch.Recv(p, {skip.data(), 8}));
      MPCACHE_RETURN_IF_ERROR(ch.Recv(1, {skip.data(), 8}));  // party 1's one id
      MPCACHE_RETURN_IF_ERROR(ch.Recv(2, {skip.data(), 8}));  // party 2's one id
      std::vector<std::uint8_t> pick;
      PutU64(pick, 99);
      PutU32(pick, 0);
      for (net::PartyId p = 1; p < 3; ++p) MPCACHE_RETURN_IF_ERROR(ch.Send(p, pick));
      MPCACHE_RETURN_IF_ERROR(ch.Flush());
      return LobbyResult{};
    }
    return RunLobbyRound(ch, Offer{{5}, {}});
  });
  // The first follower to refuse aborts the (test's) mesh: the other refused too, or was
  // cut off by that abort before it read the pick — neither goes on to serve 99.
  int refused = 0;
  for (int p = 1; p < 3; ++p) {
    const auto& r = results[static_cast<std::size_t>(p)];
    ASSERT_FALSE(r.ok());
    if (r.error().code() == ErrorCode::kAborted) continue;
    EXPECT_EQ(r.error().code(), ErrorCode::kProtocol);
    EXPECT_NE(r.error().message().find("party 0 picked session 99, which party " +
                                       std::to_string(p) + " has not queued"),
              std::string::npos)
        << r.error().message();
    ++refused;
  }
  EXPECT_GE(refused, 1);
}

TEST(SessionOrder, ASilentPeerEndsTheRoundWithItsTimeoutNotAHang) {
  net::MemMeshOptions o;
  o.recv_timeout = std::chrono::milliseconds(200);
  auto mesh = net::MemMesh::Create(3, o);
  ASSERT_TRUE(mesh.ok());
  auto results = net::RunParties(**mesh, [&](net::Channel& ch) -> Result<LobbyResult> {
    if (ch.self() == 2) return LobbyResult{};  // never offers
    return RunLobbyRound(ch, Offer{{5}, {}});
  });
  EXPECT_FALSE(results[0].ok());
  EXPECT_FALSE(results[1].ok());
}

}  // namespace
}  // namespace mpcache::daemon
