#include "net/mem_mesh.h"

#include <gtest/gtest.h>

#include <numeric>
#include <thread>

#include "net/run_parties.h"

namespace mpcache::net {
namespace {

TEST(MemMesh, RejectsTooFewParties) {
  EXPECT_FALSE(MemMesh::Create(1).ok());
}

TEST(MemMesh, DeliversBytesInOrderAcrossChunks) {
  auto mesh = MemMesh::Create(3).value();
  auto results = RunParties(*mesh, [](Channel& ch) -> Status {
    if (ch.self() == 0) {
      std::vector<std::uint64_t> a{1, 2, 3}, b{4, 5};
      MPCACHE_RETURN_IF_ERROR(ch.SendValues<std::uint64_t>(1, a));
      MPCACHE_RETURN_IF_ERROR(ch.SendValues<std::uint64_t>(1, b));
      return ch.Flush();
    }
    if (ch.self() == 1) {
      // Read across the chunk boundary: 2 values, then 3.
      std::vector<std::uint64_t> x(2), y(3);
      MPCACHE_RETURN_IF_ERROR(ch.RecvValues<std::uint64_t>(0, x));
      MPCACHE_RETURN_IF_ERROR(ch.RecvValues<std::uint64_t>(0, y));
      if (x != std::vector<std::uint64_t>{1, 2} || y != std::vector<std::uint64_t>{3, 4, 5}) {
        return Internal("wrong bytes");
      }
    }
    return Status::Ok();
  });
  for (auto& r : results) EXPECT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(mesh->party(0).stats().Total().bytes_sent, 40u);
  EXPECT_EQ(mesh->party(0).stats().Total().messages_sent, 2u);
  EXPECT_EQ(mesh->party(1).stats().Total().bytes_received, 40u);
}

TEST(MemMesh, LargeSimultaneousSendsDoNotDeadlock) {
  auto mesh = MemMesh::Create(3).value();
  const std::size_t n = 4 << 20;  // 32 MB to each peer, everyone at once
  auto results = RunParties(*mesh, [&](Channel& ch) -> Status {
    std::vector<std::uint64_t> out(n);
    std::iota(out.begin(), out.end(), static_cast<std::uint64_t>(ch.self()) << 40);
    for (int p = 0; p < 3; ++p) {
      if (p != ch.self()) MPCACHE_RETURN_IF_ERROR(ch.SendValues<std::uint64_t>(p, out));
    }
    for (int p = 0; p < 3; ++p) {
      if (p == ch.self()) continue;
      std::vector<std::uint64_t> in(n);
      MPCACHE_RETURN_IF_ERROR(ch.RecvValues<std::uint64_t>(p, in));
      for (std::size_t i = 0; i < n; i += 4099) {
        if (in[i] != (static_cast<std::uint64_t>(p) << 40) + i) return Internal("corrupt");
      }
    }
    return Status::Ok();
  });
  for (auto& r : results) EXPECT_TRUE(r.ok()) << r.error().ToString();
}

TEST(MemMesh, RecvTimesOut) {
  auto mesh = MemMesh::Create(2, {.recv_timeout = std::chrono::milliseconds(50)}).value();
  std::uint8_t b = 0;
  Status s = mesh->party(0).Recv(1, {&b, 1});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), ErrorCode::kTimeout);
}

TEST(MemMesh, AbortWakesWaiters) {
  auto mesh = MemMesh::Create(3).value();
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    mesh->Abort();
  });
  std::uint8_t b = 0;
  Status s = mesh->party(2).Recv(0, {&b, 1});
  aborter.join();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), ErrorCode::kAborted);
  // After an abort every Recv fails, also one whose bytes are queued already (the rule
  // TlsMesh keeps: TlsMesh.AbortFailsRecvEvenWithTheBytesBuffered).
  ASSERT_TRUE(mesh->party(0).Send(1, {&b, 1}).ok());
  EXPECT_EQ(mesh->party(1).Recv(0, {&b, 1}).error().code(), ErrorCode::kAborted);
  EXPECT_EQ(mesh->party(1).Recv(0, {&b, 1}).error().code(), ErrorCode::kAborted);
}

TEST(MemMesh, FailingPartyAbortsTheOthers) {
  auto mesh = MemMesh::Create(3).value();
  auto results = RunParties(*mesh, [](Channel& ch) -> Status {
    if (ch.self() == 1) return ProtocolError("party 1 gives up");
    std::uint8_t b = 0;
    return ch.Recv(1, {&b, 1});  // would wait forever without the abort
  });
  EXPECT_EQ(results[1].error().code(), ErrorCode::kProtocol);
  EXPECT_EQ(results[0].error().code(), ErrorCode::kAborted);
  EXPECT_EQ(results[2].error().code(), ErrorCode::kAborted);
}

TEST(MemMesh, RejectsSelfSend) {
  auto mesh = MemMesh::Create(3).value();
  std::uint8_t b = 0;
  EXPECT_EQ(mesh->party(1).Send(1, {&b, 1}).error().code(), ErrorCode::kInvalidArgument);
}

TEST(CommStats, PhaseScopeCountsPerPhase) {
  CommStats s;
  {
    PhaseScope p(s, "mul");
    s.RecordSend(10);
    s.RecordRound();
  }
  s.RecordSend(5);
  EXPECT_EQ(s.phases().at("mul").bytes_sent, 10u);
  EXPECT_EQ(s.phases().at("mul").rounds, 1u);
  EXPECT_EQ(s.phases().at("default").bytes_sent, 5u);
  EXPECT_EQ(s.Total().bytes_sent, 15u);
}

}  // namespace
}  // namespace mpcache::net
