// Frame rules enforced by FramedConnection on any link: a frame for another session, a
// replayed sequence number, a bad header length and an oversized payload are all
// kProtocol errors (never a crash), and an idle read with a deadline is kTimeout.
#include <gtest/gtest.h>

#include <future>

#include "net/tls/framed_connection.h"
#include "tls_test_util.h"

namespace mpcache::net {
namespace {

using testing::Files;

// A TLS link between "dealer" (server) and "party 1" (client) on loopback, with an io
// thread; the server side is a FramedConnection, the client side a raw TLS stream that
// the test writes crafted bytes to.
class FramedLink : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(testing::CertDir().empty());
    auto dctx = MakeTlsContext(Files("dealer"));
    auto pctx = MakeTlsContext(Files("party1"));
    ASSERT_TRUE(dctx.ok() && pctx.ok());
    dealer_ctx_ = std::move(dctx).value();
    party_ctx_ = std::move(pctx).value();
    auto l = TlsListener::Bind(io_, *dealer_ctx_, Endpoint{"127.0.0.1", 0});
    ASSERT_TRUE(l.ok());
    listener_ = std::move(l).value();
    std::promise<Result<AcceptedTls>> acc;
    std::promise<Result<std::unique_ptr<TlsStream>>> con;
    listener_->Start({PartyName(1)}, std::chrono::milliseconds(2000),
                     [&acc, done = std::make_shared<bool>(false)](Result<AcceptedTls> a) {
                       if (!*done) acc.set_value(std::move(a));
                       *done = true;
                     });
    AsyncConnectTls(io_, *party_ctx_, Endpoint{"127.0.0.1", listener_->port()},
                    std::string(kDealerName), Clock::now() + std::chrono::seconds(5),
                    [&con](Result<std::unique_ptr<TlsStream>> s) { con.set_value(std::move(s)); });
    thread_ = std::jthread([this] { io_.run(); });
    auto a = acc.get_future().get();
    auto c = con.get_future().get();
    ASSERT_TRUE(a.ok() && c.ok());
    server_ = std::make_shared<FramedConnection>(std::move(a->stream), kSession, 1024, "party 1");
    client_ = std::move(c).value();
  }
  void TearDown() override {
    asio::post(io_, [this] {
      if (server_) server_->Close();
      boost::system::error_code ignored;
      if (client_) client_->lowest_layer().close(ignored);
      if (listener_) listener_->Close();
    });
    asio::post(io_, [this] { io_.stop(); });
    guard_.reset();
    if (thread_.joinable()) thread_.join();
  }

  // Writes [len][header][payload] with the given fields, then reads one frame on the
  // server with a 3 s deadline.
  Result<Frame> SendRawAndRead(std::uint64_t session, std::uint64_t sequence,
                               std::uint32_t payload_length, std::size_t payload_bytes,
                               std::optional<std::uint32_t> header_len_override = {}) {
    proto::FrameHeader h;
    h.set_session_id(session);
    h.set_sequence(sequence);
    h.set_kind(proto::FRAME_DATA);
    h.set_payload_length(payload_length);
    std::string head = h.SerializeAsString();
    const std::uint32_t len = header_len_override.value_or(static_cast<std::uint32_t>(head.size()));
    auto bytes = std::make_shared<std::string>();
    for (int i = 0; i < 4; ++i) bytes->push_back(static_cast<char>(len >> (8 * i)));
    *bytes += head;
    bytes->append(payload_bytes, 'x');
    std::promise<Result<Frame>> got;
    asio::post(io_, [&, bytes] {
      asio::async_write(*client_, asio::buffer(*bytes),
                        [bytes](const boost::system::error_code&, std::size_t) {});
      server_->ReadFrame([&](Result<Frame> f) { got.set_value(std::move(f)); },
                         Clock::now() + std::chrono::seconds(3));
    });
    return got.get_future().get();
  }

  static constexpr std::uint64_t kSession = 1234;
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> guard_{io_.get_executor()};
  std::unique_ptr<asio::ssl::context> dealer_ctx_, party_ctx_;
  std::unique_ptr<TlsListener> listener_;
  std::shared_ptr<FramedConnection> server_;
  std::unique_ptr<TlsStream> client_;
  std::jthread thread_;
};

void ExpectProtocol(const Result<Frame>& f, const std::string& what) {
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().code(), ErrorCode::kProtocol) << f.error().ToString();
  EXPECT_NE(f.error().message().find(what), std::string::npos) << f.error().message();
}

TEST_F(FramedLink, GoodFrameThenReplayIsRefused) {
  auto ok = SendRawAndRead(kSession, 0, 5, 5);
  ASSERT_TRUE(ok.ok()) << ok.error().ToString();
  EXPECT_EQ(ok->payload.size(), 5u);
  ExpectProtocol(SendRawAndRead(kSession, 0, 5, 5), "replayed");
}

TEST_F(FramedLink, WrongSessionIsRefused) {
  ExpectProtocol(SendRawAndRead(kSession + 1, 0, 0, 0), "session 1235, expected session 1234");
}

TEST_F(FramedLink, OversizedPayloadIsRefusedBeforeAllocation) {
  ExpectProtocol(SendRawAndRead(kSession, 0, 0xFFFFFFFFu, 0), "max_frame_bytes");
}

TEST_F(FramedLink, BadHeaderLengthIsRefused) {
  ExpectProtocol(SendRawAndRead(kSession, 0, 0, 0, 1u << 30), "frame header of");
}

TEST_F(FramedLink, IdleReadTimesOut) {
  std::promise<Result<Frame>> got;
  asio::post(io_, [&] {
    server_->ReadFrame([&](Result<Frame> f) { got.set_value(std::move(f)); },
                       Clock::now() + std::chrono::milliseconds(200));
  });
  auto f = got.get_future().get();
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().code(), ErrorCode::kTimeout);
  EXPECT_NE(f.error().message().find("party 1"), std::string::npos);
}

}  // namespace
}  // namespace mpcache::net
