// SyncLink (daemon/sync_link.h) against a peer that bends the frame rules over real TLS on
// loopback: a peer dripping HELLO frames (which nothing sends on these links) is refused
// at the first one instead of holding Recv past its deadline, and a peer's ABORT reason
// reaches the error message as printable ASCII of bounded length.
#include "daemon/sync_link.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <thread>

#include "unit/tls/tls_test_util.h"

namespace mpcache::daemon {
namespace {

namespace asio = net::asio;
using namespace std::chrono_literals;

// `link`: a party's SyncLink to the "dealer"; `peer`: the dealer's end as a raw framed
// connection the test drives by hand (on the io thread).
class LinkPair {
 public:
  LinkPair() : guard_(io_.get_executor()) {
    if (net::testing::CertDir().empty()) return;
    auto dealer_ctx = net::MakeTlsContext(net::testing::Files("dealer"));
    auto party_ctx = net::MakeTlsContext(net::testing::Files("party1"));
    if (!dealer_ctx.ok() || !party_ctx.ok()) return;
    dealer_ctx_ = std::move(dealer_ctx).value();
    party_ctx_ = std::move(party_ctx).value();
    auto listener = net::TlsListener::Bind(io_, *dealer_ctx_, net::Endpoint{"127.0.0.1", 0});
    if (!listener.ok()) return;
    listener_ = std::move(listener).value();
    auto accepted = std::make_shared<std::promise<Result<net::AcceptedTls>>>();
    listener_->Start({net::PartyName(1)}, 2000ms, [accepted, first = true](auto a) mutable {
      if (first) accepted->set_value(std::move(a));
      first = false;
    });
    thread_ = std::thread([this] { io_.run(); });
    auto link = SyncLink::Connect(io_, *party_ctx_, net::Endpoint{"127.0.0.1", listener_->port()},
                                  std::string(net::kDealerName), 0, 1 << 20, 5000ms, "the dealer");
    if (!link.ok()) return;
    auto future = accepted->get_future();
    if (future.wait_for(5s) != std::future_status::ready) return;
    auto a = future.get();
    if (!a.ok()) return;
    link_ = std::move(link).value();
    slot_ = a->slot;
    peer_ = std::make_shared<net::FramedConnection>(std::move(a->stream), 0, 1 << 20, "party 1");
  }
  ~LinkPair() {
    link_.reset();  // closes while the io thread still runs
    asio::post(io_, [this] {
      if (peer_) peer_->Close();
      if (listener_) listener_->Close();
    });
    guard_.reset();
    if (thread_.joinable()) thread_.join();
  }
  bool ok() const { return link_ != nullptr; }
  SyncLink& link() { return *link_; }
  // Sends one frame from the peer (posted to the io thread).
  void PeerSend(proto::FrameKind kind, std::vector<std::uint8_t> payload) {
    asio::post(io_, [p = peer_, kind, b = std::move(payload)]() mutable {
      if (!p->closed()) p->Send(kind, std::move(b));
    });
  }

 private:
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> guard_;
  std::unique_ptr<asio::ssl::context> dealer_ctx_, party_ctx_;
  std::unique_ptr<net::TlsListener> listener_;
  std::thread thread_;
  std::unique_ptr<SyncLink> link_;
  std::shared_ptr<void> slot_;
  std::shared_ptr<net::FramedConnection> peer_;
};

std::vector<std::uint8_t> HelloBytes() {
  proto::Hello h;
  h.set_party_id(0);
  h.set_num_parties(3);
  h.set_protocol_version(net::kWireProtocolVersion);
  const std::string s = h.SerializeAsString();
  return {s.begin(), s.end()};
}

// A HELLO every 200 ms used to restart a 1 s Recv's deadline each time (and be skipped), so
// the drip below held it for 4 s and then some; now the first HELLO ends it as a protocol
// error, well within the timeout.
TEST(SyncLink, PeerDrippingHelloFramesIsRefusedWithinTheTimeout) {
  LinkPair pair;
  ASSERT_TRUE(pair.ok());
  std::atomic<bool> stop{false};
  std::thread drip([&] {
    for (int i = 0; i < 20 && !stop; ++i) {
      pair.PeerSend(proto::FRAME_HELLO, HelloBytes());
      std::this_thread::sleep_for(200ms);
    }
  });
  const auto t0 = std::chrono::steady_clock::now();
  auto r = pair.link().Recv(1000ms);
  const auto took = std::chrono::steady_clock::now() - t0;
  stop = true;
  drip.join();
  ASSERT_FALSE(r.ok()) << "a HELLO was taken for a message";
  EXPECT_EQ(r.error().code(), ErrorCode::kProtocol) << r.error().ToString();
  EXPECT_NE(r.error().message().find("the dealer sent an unexpected FRAME_HELLO frame"),
            std::string::npos)
      << r.error().message();
  EXPECT_LT(took, 1000ms) << "Recv outlived its timeout";
}

// A HELLO after a DATA frame (not only as the first frame) is refused too.
TEST(SyncLink, HelloAfterDataIsRefusedToo) {
  LinkPair pair;
  ASSERT_TRUE(pair.ok());
  pair.PeerSend(proto::FRAME_DATA, {0, 42});  // a whole one-byte message (last fragment)
  pair.PeerSend(proto::FRAME_HELLO, HelloBytes());
  auto first = pair.link().Recv(2000ms);
  ASSERT_TRUE(first.ok()) << first.error().ToString();
  EXPECT_EQ(*first, std::vector<std::uint8_t>{42});
  auto second = pair.link().Recv(2000ms);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().code(), ErrorCode::kProtocol) << second.error().ToString();
}

// A peer's ABORT reason with line breaks, terminal escapes, a NUL, non-ASCII and 5000 bytes
// of padding becomes one line of printable text, capped, in the error; one that is not even
// a valid Abort (a string field with invalid UTF-8) is reported as unreadable.
TEST(SyncLink, AbortReasonIsPrintableAndCapped) {
  LinkPair pair;
  ASSERT_TRUE(pair.ok());
  std::string reason = "evil\nerror: forged line\r\x1b[2J";
  reason += std::string("\0\xc3\xa9", 3);  // NUL, then U+00E9 in UTF-8
  reason += std::string(5000, 'A');
  proto::Abort a;
  a.set_reason(reason);
  const std::string bytes = a.SerializeAsString();
  pair.PeerSend(proto::FRAME_ABORT, {bytes.begin(), bytes.end()});
  auto r = pair.link().Recv(2000ms);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kAborted) << r.error().ToString();
  const std::string& m = r.error().message();
  for (const char c : m) {
    const auto u = static_cast<unsigned char>(c);
    ASSERT_TRUE(u >= 0x20 && u < 0x7f) << "byte " << static_cast<int>(u) << " in: " << m;
  }
  EXPECT_NE(m.find("the dealer aborted the request: evil\\x0aerror: forged line\\x0d\\x1b[2J\\x00"
                   "\\xc3\\xa9AAA"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("... (" + std::to_string(reason.size()) + " bytes)"), std::string::npos) << m;
  EXPECT_LT(m.size(), 4 * SyncLink::kMaxAbortReasonBytes + 100) << m;

  LinkPair second;
  ASSERT_TRUE(second.ok());
  // Field 1 (reason), length 2, bytes ff fe: not UTF-8, so not a parseable Abort.
  second.PeerSend(proto::FRAME_ABORT, {0x0a, 0x02, 0xff, 0xfe});
  auto u = second.link().Recv(2000ms);
  ASSERT_FALSE(u.ok());
  EXPECT_EQ(u.error().code(), ErrorCode::kAborted);
  EXPECT_NE(u.error().message().find("the dealer aborted the request (its reason is unreadable)"),
            std::string::npos)
      << u.error().message();
}

}  // namespace
}  // namespace mpcache::daemon
