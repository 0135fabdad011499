// TlsMesh data path over loopback: all-to-all exchange (including 64 MB sent both ways at
// once), byte accounting, timeouts, abort propagation, oversized frames, peer loss and
// graceful close.
#include <gtest/gtest.h>

#include <cstdint>
#include <thread>
#include <vector>

#include "tls_test_util.h"

namespace mpcache::net {
namespace {

using testing::Options;
using testing::StartMeshes;

std::vector<std::uint8_t> Pattern(std::size_t n, PartyId from, PartyId to) {
  std::vector<std::uint8_t> v(n);
  std::uint32_t x = 0x9E3779B9u * static_cast<std::uint32_t>(1 + from * 7 + to);
  for (auto& b : v) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    b = static_cast<std::uint8_t>(x);
  }
  return v;
}

TEST(TlsMesh, AllToAllIncludingLargeSimultaneousSends) {
  ASSERT_FALSE(testing::CertDir().empty()) << "gen-certs.sh failed";
  auto s = StartMeshes({Options(0, 3), Options(1, 3), Options(2, 3)});
  ASSERT_TRUE(s.all_ok()) << testing::Msg(s.connect[0]) << " | " << testing::Msg(s.connect[1])
                          << " | " << testing::Msg(s.connect[2]);
  constexpr std::size_t kSmall = 1000;
  constexpr std::size_t kLarge = std::size_t{64} << 20;
  std::vector<Status> results(3);
  {
    std::vector<std::jthread> threads;
    for (PartyId p = 0; p < 3; ++p) {
      threads.emplace_back([&, p] {
        auto& m = *s.meshes[static_cast<std::size_t>(p)];
        auto run = [&]() -> Status {
          for (PartyId q = 0; q < 3; ++q) {
            if (q == p) continue;
            MPCACHE_RETURN_IF_ERROR(m.Send(q, Pattern(kSmall, p, q)));
            MPCACHE_RETURN_IF_ERROR(m.Send(q, Pattern(kLarge, p, q)));
          }
          MPCACHE_RETURN_IF_ERROR(m.Flush());
          for (PartyId q = 0; q < 3; ++q) {
            if (q == p) continue;
            std::vector<std::uint8_t> small(kSmall), large(kLarge);
            MPCACHE_RETURN_IF_ERROR(m.Recv(q, small));
            MPCACHE_RETURN_IF_ERROR(m.Recv(q, large));
            if (small != Pattern(kSmall, q, p) || large != Pattern(kLarge, q, p)) {
              return Internal("wrong bytes from party " + std::to_string(q));
            }
          }
          return Status::Ok();
        };
        results[static_cast<std::size_t>(p)] = run();
      });
    }
  }
  for (PartyId p = 0; p < 3; ++p) {
    EXPECT_TRUE(results[static_cast<std::size_t>(p)].ok())
        << testing::Msg(results[static_cast<std::size_t>(p)]);
    const auto total = s.meshes[static_cast<std::size_t>(p)]->stats().Total();
    EXPECT_EQ(total.bytes_sent, 2 * (kSmall + kLarge));
    EXPECT_EQ(total.bytes_received, 2 * (kSmall + kLarge));
    EXPECT_EQ(total.messages_sent, 4u);
  }
  std::vector<std::jthread> closers;
  for (auto& m : s.meshes) closers.emplace_back([&m] { EXPECT_TRUE(m->Close().ok()); });
}

TEST(TlsMesh, ManySmallRoundTrips) {
  auto s = StartMeshes({Options(0, 2), Options(1, 2)});
  ASSERT_TRUE(s.all_ok()) << testing::Msg(s.connect[0]) << " | " << testing::Msg(s.connect[1]);
  std::jthread peer([&] {
    auto& m = *s.meshes[1];
    for (std::uint64_t i = 0; i < 200; ++i) {
      std::uint64_t v = 0;
      if (!m.RecvValues<std::uint64_t>(0, {&v, 1}).ok()) return;
      v += 1;
      if (!m.SendValues<std::uint64_t>(0, {&v, 1}).ok() || !m.Flush().ok()) return;
    }
  });
  auto& m = *s.meshes[0];
  for (std::uint64_t i = 0; i < 200; ++i) {
    std::uint64_t v = i * 10;
    ASSERT_TRUE(m.SendValues<std::uint64_t>(1, {&v, 1}).ok());
    ASSERT_TRUE(m.Flush().ok());
    ASSERT_TRUE(m.RecvValues<std::uint64_t>(1, {&v, 1}).ok());
    ASSERT_EQ(v, i * 10 + 1);
  }
}

TEST(TlsMesh, RecvTimeoutNamesThePeer) {
  auto o0 = Options(0, 2);
  o0.recv_timeout = std::chrono::milliseconds(200);
  auto s = StartMeshes({o0, Options(1, 2)});
  ASSERT_TRUE(s.all_ok());
  std::uint8_t b[8];
  const auto start = std::chrono::steady_clock::now();
  const Status st = s.meshes[0]->Recv(1, b);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code(), ErrorCode::kTimeout);
  EXPECT_NE(st.error().message().find("party 1 (mpcache-party-1)"), std::string::npos)
      << st.error().message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
}

TEST(TlsMesh, AbortReachesEveryPartyIncludingPendingRecv) {
  auto s = StartMeshes({Options(0, 3), Options(1, 3), Options(2, 3)});
  ASSERT_TRUE(s.all_ok());
  Status pending0, pending2;
  {
    std::jthread r0([&] {
      std::uint8_t b[4];
      pending0 = s.meshes[0]->Recv(1, b);
    });
    std::jthread r2([&] {
      std::uint8_t b[4];
      pending2 = s.meshes[2]->Recv(0, b);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    s.meshes[1]->Abort("MAC check failed in phase attention", PartyId{2});
  }
  for (const Status* st : {&pending0, &pending2}) {
    ASSERT_FALSE(st->ok());
    EXPECT_EQ(st->error().code(), ErrorCode::kAborted);
    EXPECT_NE(st->error().message().find("party 1"), std::string::npos) << st->error().message();
    EXPECT_NE(st->error().message().find("MAC check failed"), std::string::npos);
    EXPECT_NE(st->error().message().find("blames party 2"), std::string::npos);
  }
  std::uint8_t b[4];
  EXPECT_EQ(s.meshes[1]->Recv(0, b).error().code(), ErrorCode::kAborted);  // the aborter too
  EXPECT_EQ(s.meshes[2]->Recv(1, b).error().code(), ErrorCode::kAborted);  // future Recv
  EXPECT_EQ(s.meshes[0]->Send(2, b).error().code(), ErrorCode::kAborted);
}

// One rule for both meshes (MemMesh.AbortWakesWaiters): after an abort every Recv fails, also
// one whose bytes arrived before it.
TEST(TlsMesh, AbortFailsRecvEvenWithTheBytesBuffered) {
  auto s = StartMeshes({Options(0, 2), Options(1, 2)});
  ASSERT_TRUE(s.all_ok());
  std::uint8_t b[4] = {1, 2, 3, 4};
  ASSERT_TRUE(s.meshes[0]->Send(1, b).ok());
  ASSERT_TRUE(s.meshes[0]->Flush().ok());
  std::uint8_t first[2];
  ASSERT_TRUE(s.meshes[1]->Recv(0, first).ok());  // the bytes are in party 1's buffer
  s.meshes[0]->Abort("party 0 gives up");
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!s.meshes[1]->aborted() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(s.meshes[1]->aborted().has_value());
  std::uint8_t rest[2];
  const Status st = s.meshes[1]->Recv(0, rest);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code(), ErrorCode::kAborted) << st.error().ToString();
}

TEST(TlsMesh, OversizedFrameIsAProtocolErrorNotACrash) {
  auto o0 = Options(0, 2);
  o0.send_chunk_bytes = std::size_t{4} << 20;  // sender cuts 4 MiB frames...
  auto o1 = Options(1, 2);
  o1.max_frame_bytes = std::size_t{1} << 20;  // ...receiver accepts at most 1 MiB
  o1.recv_timeout = std::chrono::milliseconds(3000);
  o0.recv_timeout = std::chrono::milliseconds(3000);
  auto s = StartMeshes({o0, o1});
  ASSERT_TRUE(s.all_ok());
  std::vector<std::uint8_t> big(std::size_t{4} << 20, 7);
  ASSERT_TRUE(s.meshes[0]->Send(1, big).ok());
  ASSERT_TRUE(s.meshes[0]->Flush().ok());
  const Status st = s.meshes[1]->Recv(0, big);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code(), ErrorCode::kProtocol);
  EXPECT_NE(st.error().message().find("max_frame_bytes"), std::string::npos)
      << st.error().message();
  // The connection is dropped: the sender's next Recv fails (not a hang, not a crash).
  std::uint8_t b[4];
  const Status back = s.meshes[0]->Recv(1, b);
  ASSERT_FALSE(back.ok());
  EXPECT_EQ(back.error().code(), ErrorCode::kIo) << back.error().ToString();
}

TEST(TlsMesh, FloodBeyondTheBufferLimitIsAProtocolError) {
  auto o1 = Options(1, 2);
  o1.max_buffered_bytes = std::size_t{1} << 20;
  auto s = StartMeshes({Options(0, 2), o1});
  ASSERT_TRUE(s.all_ok());
  std::vector<std::uint8_t> flood(std::size_t{3} << 20, 1);
  ASSERT_TRUE(s.meshes[0]->Send(1, flood).ok());
  ASSERT_TRUE(s.meshes[0]->Flush().ok());
  const Status st = s.meshes[1]->Recv(0, flood);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code(), ErrorCode::kProtocol);
  EXPECT_NE(st.error().message().find("max_buffered_bytes"), std::string::npos)
      << st.error().message();
}

TEST(TlsMesh, PeerLossFailsRecvFastNamingThePeer) {
  auto s = StartMeshes({Options(0, 2), Options(1, 2)});
  ASSERT_TRUE(s.all_ok());
  s.meshes[1].reset();  // destroyed: closes its connections
  std::uint8_t b[4];
  const auto start = std::chrono::steady_clock::now();
  const Status st = s.meshes[0]->Recv(1, b);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code(), ErrorCode::kIo);
  EXPECT_NE(st.error().message().find("party 1"), std::string::npos) << st.error().message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(TlsMesh, CloseDeliversQueuedBytesFirst) {
  auto s = StartMeshes({Options(0, 2), Options(1, 2)});
  ASSERT_TRUE(s.all_ok());
  const auto data = Pattern(100000, 0, 1);
  ASSERT_TRUE(s.meshes[0]->Send(1, data).ok());
  std::jthread closer([&] { EXPECT_TRUE(s.meshes[0]->Close().ok()); });
  std::vector<std::uint8_t> got(data.size());
  ASSERT_TRUE(s.meshes[1]->Recv(0, got).ok());
  EXPECT_EQ(got, data);
  std::uint8_t b[1];
  const Status after = s.meshes[1]->Recv(0, b);
  ASSERT_FALSE(after.ok());
  EXPECT_NE(after.error().message().find("closed"), std::string::npos) << after.error().message();
  EXPECT_TRUE(s.meshes[1]->Close().ok());
}

TEST(TlsMesh, BadPeerArgumentsAreErrors) {
  auto s = StartMeshes({Options(0, 2), Options(1, 2)});
  ASSERT_TRUE(s.all_ok());
  std::uint8_t b[1] = {};
  EXPECT_EQ(s.meshes[0]->Send(0, b).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(s.meshes[0]->Recv(5, b).error().code(), ErrorCode::kInvalidArgument);
}

TEST(TlsMesh, FrameSizesBeyond32BitsAreRefusedAtListen) {
  // payload_length is 32 bits: a bigger chunk would go out with a wrapped length.
  auto o = Options(0, 2);
  o.send_chunk_bytes = std::size_t{1} << 33;
  auto m = TlsMesh::Listen(o);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(m.error().message().find("send_chunk_bytes (8589934592)"), std::string::npos)
      << m.error().message();
  o = Options(0, 2);
  o.max_frame_bytes = std::size_t{1} << 32;
  EXPECT_FALSE(TlsMesh::Listen(o).ok());
}

}  // namespace
}  // namespace mpcache::net
