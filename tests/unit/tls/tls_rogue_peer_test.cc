// A party holding a valid certificate that breaks the frame rules after a correct hello:
// party 0 is a real TlsMesh, party 1 is this test writing crafted frames on a raw TLS
// stream. Every broken frame (a skipped, repeated or reordered sequence number, another
// session, a HELLO or unknown kind where DATA is expected, a CLOSE with a payload, an
// empty DATA frame, a payload length that lies or overflows) makes Recv from party 1 fail
// with kProtocol naming what was wrong, party 0 drops the connection and refuses to send
// to it; the bytes of a refused frame are never delivered. A frame cut short is a
// kTimeout after recv_timeout, not a hang. A party that completes the TLS handshake and
// then says nothing cannot stop the mesh from forming.
#include <gtest/gtest.h>

#include <future>
#include <optional>
#include <string>

#include "tls_test_util.h"

namespace mpcache::net {
namespace {

using testing::Files;
using testing::Options;

constexpr std::uint64_t kSession = 42;  // testing::Options' session

std::string Le32(std::uint32_t v) {
  std::string out;
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
  return out;
}

// [u32 header length][FrameHeader][payload]; `declared` overrides payload_length.
std::string RawFrame(std::uint64_t sequence, proto::FrameKind kind, const std::string& payload,
                     std::uint64_t session = kSession,
                     std::optional<std::uint32_t> declared = std::nullopt) {
  proto::FrameHeader h;
  h.set_session_id(session);
  h.set_sequence(sequence);
  h.set_kind(kind);
  h.set_payload_length(declared.value_or(static_cast<std::uint32_t>(payload.size())));
  const std::string head = h.SerializeAsString();
  return Le32(static_cast<std::uint32_t>(head.size())) + head + payload;
}

std::string Data(std::uint64_t sequence, const std::string& payload) {
  return RawFrame(sequence, proto::FRAME_DATA, payload);
}

std::string HelloFrom(PartyId id) {
  proto::Hello hello;
  hello.set_party_id(static_cast<std::uint32_t>(id));
  hello.set_num_parties(2);
  hello.set_protocol_version(kWireProtocolVersion);
  hello.set_session_id(kSession);
  return RawFrame(0, proto::FRAME_HELLO, hello.SerializeAsString());
}

class RoguePeer : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(testing::CertDir().empty()) << "gen-certs.sh failed";
    auto o0 = Options(0, 2);
    o0.recv_timeout = std::chrono::milliseconds(3000);
    o0.handshake_timeout = std::chrono::milliseconds(1000);
    auto m = TlsMesh::Listen(o0);
    ASSERT_TRUE(m.ok()) << m.error().ToString();
    mesh_ = std::move(m).value();
    auto ctx = MakeTlsContext(Files("party1"));
    ASSERT_TRUE(ctx.ok()) << ctx.error().ToString();
    ctx_ = std::move(ctx).value();
    io_thread_ = std::jthread([this] { io_.run(); });
    const std::vector<Endpoint> addrs = {{"127.0.0.1", mesh_->listen_port()}, {"127.0.0.1", 1}};
    auto connected = std::async(std::launch::async, [&] { return mesh_->Connect(addrs); });
    if (silent_first_) {  // a valid peer that never sends its hello
      auto silent = Dial();
      ASSERT_NE(silent, nullptr);
      streams_.push_back(std::move(silent));
    }
    stream_ = Dial();
    ASSERT_NE(stream_, nullptr);
    ASSERT_TRUE(Write(HelloFrom(1)));
    const Status s = connected.get();
    ASSERT_TRUE(s.ok()) << s.error().ToString();
  }

  void TearDown() override {
    if (mesh_) mesh_->Abort("test over");
    mesh_.reset();
    asio::post(io_, [this] {
      boost::system::error_code ignored;
      for (auto& s : streams_) s->lowest_layer().close(ignored);
      if (stream_) stream_->lowest_layer().close(ignored);
    });
    guard_.reset();
    asio::post(io_, [this] { io_.stop(); });
    if (io_thread_.joinable()) io_thread_.join();
  }

  std::unique_ptr<TlsStream> Dial() {
    std::promise<Result<std::unique_ptr<TlsStream>>> p;
    AsyncConnectTls(io_, *ctx_, Endpoint{"127.0.0.1", mesh_->listen_port()}, PartyName(0),
                    Clock::now() + std::chrono::seconds(5),
                    [&p](Result<std::unique_ptr<TlsStream>> s) { p.set_value(std::move(s)); });
    auto s = p.get_future().get();
    EXPECT_TRUE(s.ok()) << s.error().ToString();
    return s.ok() ? std::move(s).value() : nullptr;
  }

  bool Write(const std::string& bytes) {
    auto buf = std::make_shared<std::string>(bytes);
    std::promise<boost::system::error_code> done;
    asio::post(io_, [&, buf] {
      asio::async_write(
          *stream_, asio::buffer(*buf),
          [&done, buf](const boost::system::error_code& ec, std::size_t) { done.set_value(ec); });
    });
    return !done.get_future().get();
  }

  // True when party 0 closes the connection within 5 s (what it sent before is skipped).
  bool Dropped() {
    auto buf = std::make_shared<std::array<char, 4096>>();
    auto timer = std::make_shared<asio::steady_timer>(io_, std::chrono::seconds(5));
    std::promise<bool> closed;
    auto read = std::make_shared<std::function<void()>>();
    *read = [&, buf, timer, read] {
      stream_->async_read_some(asio::buffer(*buf),
                               [&, read, timer](const boost::system::error_code& ec, std::size_t) {
                                 if (!ec) return (*read)();
                                 const bool by_peer = ec != asio::error::operation_aborted;
                                 timer->cancel();
                                 closed.set_value(by_peer);
                                 *read = nullptr;  // break the cycle
                               });
    };
    asio::post(io_, [&, timer, read] {
      timer->async_wait([this](const boost::system::error_code& ec) {
        boost::system::error_code ignored;
        if (!ec) stream_->lowest_layer().cancel(ignored);
      });
      (*read)();
    });
    return closed.get_future().get();
  }

  Result<std::string> Recv(std::size_t n) {
    std::string out(n, '\0');
    const Status s =
        mesh_->Recv(1, std::span(reinterpret_cast<std::uint8_t*>(out.data()), out.size()));
    if (!s.ok()) return s.error();
    return out;
  }

  // The next Recv is a protocol error saying `what`, the connection is dropped and party 0
  // refuses to send to party 1 from then on.
  void ExpectRefused(const std::string& what) {
    const auto got = Recv(4);
    ASSERT_FALSE(got.ok()) << "accepted: " << *got;
    EXPECT_EQ(got.error().code(), ErrorCode::kProtocol) << got.error().ToString();
    EXPECT_NE(got.error().message().find(what), std::string::npos) << got.error().message();
    EXPECT_NE(got.error().message().find("party 1 (mpcache-party-1)"), std::string::npos)
        << got.error().message();
    EXPECT_TRUE(Dropped());
    const std::uint8_t b[1] = {1};
    const Status send = mesh_->Send(1, b);
    ASSERT_FALSE(send.ok());
    EXPECT_EQ(send.error().code(), ErrorCode::kProtocol) << send.error().ToString();
  }

  void ExpectDelivered(const std::string& bytes) {
    const auto got = Recv(bytes.size());
    ASSERT_TRUE(got.ok()) << got.error().ToString();
    EXPECT_EQ(*got, bytes);
  }

  bool silent_first_ = false;
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> guard_{io_.get_executor()};
  std::unique_ptr<asio::ssl::context> ctx_;
  std::unique_ptr<TlsMesh> mesh_;
  std::vector<std::unique_ptr<TlsStream>> streams_;
  std::unique_ptr<TlsStream> stream_;
  std::jthread io_thread_;
};

TEST_F(RoguePeer, WellFormedFramesAreDelivered) {  // the baseline the others break
  ASSERT_TRUE(Write(Data(1, "abcd") + Data(2, "efgh")));
  ExpectDelivered("abcdefgh");
  ASSERT_TRUE(Write(RawFrame(9, proto::FRAME_ABORT, "")));  // aborts jump the sequence
  const auto got = Recv(1);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().code(), ErrorCode::kAborted) << got.error().ToString();
}

TEST_F(RoguePeer, SkippedSequenceNumber) {
  ASSERT_TRUE(Write(Data(1, "abcd") + Data(3, "efgh")));
  ExpectDelivered("abcd");
  ExpectRefused("sent frame number 3, expected 2 (replayed or reordered frame)");
}

TEST_F(RoguePeer, RepeatedSequenceNumber) {
  ASSERT_TRUE(Write(Data(1, "abcd") + Data(1, "abcd")));
  ExpectDelivered("abcd");
  ExpectRefused("sent frame number 1, expected 2 (replayed or reordered frame)");
}

TEST_F(RoguePeer, ReorderedPair) {
  ASSERT_TRUE(Write(Data(2, "efgh") + Data(1, "abcd")));
  ExpectRefused("sent frame number 2, expected 1");  // and "efgh" was never delivered
}

TEST_F(RoguePeer, ReplayedHelloNumber) {
  ASSERT_TRUE(Write(Data(0, "abcd")));
  ExpectRefused("sent frame number 0, expected 1");
}

TEST_F(RoguePeer, FrameOfAnotherSession) {
  ASSERT_TRUE(Write(RawFrame(1, proto::FRAME_DATA, "abcd", kSession + 1)));
  ExpectRefused("sent a frame for session 43, expected session 42");
}

TEST_F(RoguePeer, HelloWhereDataIsExpected) {
  proto::Hello hello;
  hello.set_party_id(1);
  ASSERT_TRUE(Write(RawFrame(1, proto::FRAME_HELLO, hello.SerializeAsString())));
  ExpectRefused("unexpected FRAME_HELLO frame 1 after the hello");
}

TEST_F(RoguePeer, UnknownFrameKind) {
  ASSERT_TRUE(Write(RawFrame(1, static_cast<proto::FrameKind>(9), "abcd")));
  ExpectRefused("sent a frame of unknown kind 9");
}

TEST_F(RoguePeer, CloseWithAPayload) {
  ASSERT_TRUE(Write(RawFrame(1, proto::FRAME_CLOSE, "abcd")));
  ExpectRefused("CLOSE frame with a payload of 4 bytes");
}

TEST_F(RoguePeer, EmptyDataFrame) {
  ASSERT_TRUE(Write(Data(1, "")));
  ExpectRefused("sent an empty DATA frame 1");
}

TEST_F(RoguePeer, PayloadLongerThanDeclared) {
  // The 4 bytes past the declared payload are read as the next frame's header length.
  ASSERT_TRUE(Write(RawFrame(1, proto::FRAME_DATA, "abcdxxxxyyyy", kSession, 4)));
  ExpectDelivered("abcd");
  ExpectRefused("sent a frame header of 2021161080 bytes (allowed 1..1024)");
}

TEST_F(RoguePeer, PayloadLengthBeyondMaxFrameBytes) {
  ASSERT_TRUE(Write(RawFrame(1, proto::FRAME_DATA, "abcd", kSession, 0xFFFFFFFFu)));
  ExpectRefused("sent a frame of 4294967295 bytes, more than max_frame_bytes");
}

TEST_F(RoguePeer, HeaderLengthOverflowAndGarbageHeader) {
  ASSERT_TRUE(Write(Le32(0xFFFFFFFFu) + "abcd"));
  ExpectRefused("sent a frame header of 4294967295 bytes");
}

TEST_F(RoguePeer, UnparseableHeader) {
  ASSERT_TRUE(Write(Le32(4) + std::string("\xff\xff\xff\xff", 4)));
  ExpectRefused("sent an unparseable frame header");
}

TEST_F(RoguePeer, FrameCutShortIsATimeoutNotAHang) {
  const std::string frame = Data(1, std::string(100, 'z'));
  ASSERT_TRUE(Write(frame.substr(0, frame.size() - 90)));
  const auto start = Clock::now();
  const auto got = Recv(4);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().code(), ErrorCode::kTimeout) << got.error().ToString();
  EXPECT_NE(got.error().message().find("party 1 (mpcache-party-1)"), std::string::npos);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(6));
}

TEST_F(RoguePeer, AbortReasonCannotForgeALogLine) {
  proto::Abort abort;
  abort.set_reason("bad MAC\nparty 2: forged line");
  ASSERT_TRUE(Write(RawFrame(7, proto::FRAME_ABORT, abort.SerializeAsString())));
  const auto got = Recv(4);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().code(), ErrorCode::kAborted) << got.error().ToString();
  EXPECT_NE(got.error().message().find("party 1 (mpcache-party-1): bad MAC\\x0aparty 2: forged"),
            std::string::npos)
      << got.error().message();
  EXPECT_EQ(got.error().message().find('\n'), std::string::npos);
}

class SilentPeer : public RoguePeer {
 protected:
  void SetUp() override {
    silent_first_ = true;
    RoguePeer::SetUp();
  }
};

TEST_F(SilentPeer, AHelloThatNeverComesDoesNotStopTheMesh) {
  // SetUp asserted that the mesh formed with the second connection; the first, silent one
  // was dropped after handshake_timeout.
  ASSERT_FALSE(streams_.empty());
  std::swap(stream_, streams_.front());
  EXPECT_TRUE(Dropped());
  std::swap(stream_, streams_.front());
  ASSERT_TRUE(Write(Data(1, "abcd")));
  ExpectDelivered("abcd");
}

}  // namespace
}  // namespace mpcache::net
