// The connector helpers the dealer and client links reuse (roles other than parties),
// framed messages over them, and building a mesh from a party's YAML config.
#include <gtest/gtest.h>

#include <future>

#include "dealer.pb.h"
#include "net/tls/framed_connection.h"
#include "net/tls/mesh_config.h"
#include "tls_test_util.h"

namespace mpcache::net {
namespace {

using testing::Files;

// Runs `io` on a background thread for the scope's lifetime.
class IoThread {
 public:
  explicit IoThread(asio::io_context& io) : io_(io), guard_(io.get_executor()) {
    thread_ = std::jthread([this] { io_.run(); });
  }
  ~IoThread() {
    guard_.reset();
    io_.stop();
  }

 private:
  asio::io_context& io_;
  asio::executor_work_guard<asio::io_context::executor_type> guard_;
  std::jthread thread_;
};

TEST(TlsConnector, DealerAcceptsPartiesAndRefusesTheClientRole) {
  ASSERT_FALSE(testing::CertDir().empty());
  auto dealer_ctx = MakeTlsContext(Files("dealer"));
  auto party_ctx = MakeTlsContext(Files("party1"));
  auto client_ctx = MakeTlsContext(Files("client"));
  ASSERT_TRUE(dealer_ctx.ok() && party_ctx.ok() && client_ctx.ok());
  asio::io_context io;
  auto listener = TlsListener::Bind(io, **dealer_ctx, Endpoint{"127.0.0.1", 0});
  ASSERT_TRUE(listener.ok()) << listener.error().ToString();
  const std::uint16_t port = (*listener)->port();

  std::promise<Result<AcceptedTls>> accepted_first;
  std::promise<Error> refused_second;
  int calls = 0;
  (*listener)->Start({PartyName(0), PartyName(1), PartyName(2)}, std::chrono::milliseconds(2000),
                     [&](Result<AcceptedTls> a) {
                       if (calls++ == 0) {
                         accepted_first.set_value(std::move(a));
                       } else if (!a.ok()) {
                         refused_second.set_value(a.error());
                       }
                     });
  std::promise<Result<std::unique_ptr<TlsStream>>> party_side;
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  AsyncConnectTls(
      io, **party_ctx, Endpoint{"127.0.0.1", port}, std::string(kDealerName), deadline,
      [&](Result<std::unique_ptr<TlsStream>> s) { party_side.set_value(std::move(s)); });
  std::shared_ptr<FramedConnection> dealer_conn, party_conn;
  {
    IoThread runner(io);
    auto a = accepted_first.get_future().get();
    auto p = party_side.get_future().get();
    ASSERT_TRUE(a.ok()) << a.error().ToString();
    ASSERT_TRUE(p.ok()) << p.error().ToString();
    EXPECT_EQ(a->peer_name, "mpcache-party-1");

    // A framed dealer message from the party to the dealer.
    dealer_conn = std::make_shared<FramedConnection>(std::move(a->stream), 9, 1 << 20, "party 1");
    party_conn = std::make_shared<FramedConnection>(std::move(p).value(), 9, 1 << 20, "dealer");
    proto::BatchRequest req;
    req.set_session_id(9);
    req.set_item_type(proto::ITEM_BEAVER_TRIPLE);
    req.set_count(1000);
    std::vector<std::uint8_t> bytes(req.ByteSizeLong());
    req.SerializeToArray(bytes.data(), static_cast<int>(bytes.size()));
    std::promise<Result<Frame>> got;
    asio::post(io, [&] {
      party_conn->Send(proto::FRAME_HELLO, {});
      party_conn->Send(proto::FRAME_DATA, bytes);
      dealer_conn->ReadFrame([&, conn = dealer_conn](Result<Frame> hello) {
        if (!hello.ok()) return got.set_value(std::move(hello));
        conn->ReadFrame([&](Result<Frame> f) { got.set_value(std::move(f)); });
      });
    });
    auto f = got.get_future().get();
    ASSERT_TRUE(f.ok()) << f.error().ToString();
    EXPECT_EQ(f->header.sequence(), 1u);
    proto::BatchRequest back;
    ASSERT_TRUE(back.ParseFromArray(f->payload.data(), static_cast<int>(f->payload.size())));
    EXPECT_EQ(back.count(), 1000u);

    // The client's certificate is valid but not a party's: refused by name.
    std::promise<Result<std::unique_ptr<TlsStream>>> client_side;
    AsyncConnectTls(
        io, **client_ctx, Endpoint{"127.0.0.1", port}, std::string(kDealerName), deadline,
        [&](Result<std::unique_ptr<TlsStream>> s) { client_side.set_value(std::move(s)); });
    auto refused = refused_second.get_future();
    ASSERT_EQ(refused.wait_for(std::chrono::seconds(5)), std::future_status::ready);
    const Error e = refused.get();
    EXPECT_NE(e.message().find("mpcache-client"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("refused"), std::string::npos) << e.message();
    (void)client_side.get_future().get();
    asio::post(io, [&] {
      dealer_conn->Close();
      party_conn->Close();
      (*listener)->Close();
    });
  }
}

// A listen address that cannot be used says why and what to do (issue 20: every failure got
// "is another daemon using this port?"): a port something holds, an address that is not this
// machine's (192.0.2.1, TEST-NET-1, is nobody's), a name that does not resolve.
TEST(TlsConnector, ListenErrorsSayWhyAndTheFix) {
  ASSERT_FALSE(testing::CertDir().empty());
  auto ctx = MakeTlsContext(Files("party0"));
  ASSERT_TRUE(ctx.ok()) << ctx.error().ToString();
  asio::io_context io;
  auto first = TlsListener::Bind(io, **ctx, Endpoint{"127.0.0.1", 0});
  ASSERT_TRUE(first.ok()) << first.error().ToString();
  const std::uint16_t port = (*first)->port();
  auto held = TlsListener::Bind(io, **ctx, Endpoint{"127.0.0.1", port});
  ASSERT_FALSE(held.ok());
  EXPECT_NE(held.error().message().find("something else listens on port " + std::to_string(port) +
                                        ": stop it, or give this daemon another port"),
            std::string::npos)
      << held.error().message();
  auto foreign = TlsListener::Bind(io, **ctx, Endpoint{"192.0.2.1", 0});
  ASSERT_FALSE(foreign.ok());
  EXPECT_NE(foreign.error().message().find("192.0.2.1 is not an address of this machine: listen "
                                           "on one of its own addresses, or 0.0.0.0 for all"),
            std::string::npos)
      << foreign.error().message();
  EXPECT_EQ(foreign.error().message().find("something else listens"), std::string::npos);
  auto unknown = TlsListener::Bind(io, **ctx, Endpoint{"no-such-host.invalid", 0});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message().find("cannot resolve listen address"), std::string::npos)
      << unknown.error().message();
  (*first)->Close();
}

TEST(TlsConnector, MeshOptionsFromPartyConfig) {
  const std::string yaml = R"(party_id: 2
network:
  parties: [127.0.0.1:7100, 127.0.0.1:7101, 127.0.0.1:7102]
  dealer: 127.0.0.1:7200
  client_listen: 127.0.0.1:7112
  max_frame_bytes: 65536
timeouts: {connect_ms: 4000, recv_ms: 1234}
tls: {cert: c.crt, key: c.key, ca: ca.crt}
model: {checkpoint: m.bin}
)";
  auto cfg = config::ParsePartyConfig(yaml, "/etc/mpcache/party2.yaml", {.check_files = false});
  ASSERT_TRUE(cfg.ok()) << cfg.error().ToString();
  const auto o = MeshOptionsFromConfig(*cfg, 77);
  EXPECT_EQ(o.self, 2);
  EXPECT_EQ(o.num_parties, 3);
  EXPECT_EQ(o.addresses[1].ToString(), "127.0.0.1:7101");
  EXPECT_EQ(o.tls.ca_file, "/etc/mpcache/ca.crt");
  EXPECT_EQ(o.session_id, 77u);
  EXPECT_EQ(o.connect_timeout.count(), 4000);
  EXPECT_EQ(o.recv_timeout.count(), 1234);
  EXPECT_EQ(o.max_frame_bytes, 65536u);
  EXPECT_LE(o.send_chunk_bytes, o.max_frame_bytes);

  // The same options, with real certificates and free ports, make a working mesh.
  std::vector<TlsMeshOptions> opts;
  for (int i = 0; i < 3; ++i) {
    auto c = *cfg;
    c.party_id = i;
    auto oi = MeshOptionsFromConfig(c, 77);
    oi.tls = Files("party" + std::to_string(i));
    oi.addresses.assign(3, Endpoint{"127.0.0.1", 0});
    oi.close_timeout = std::chrono::milliseconds(300);
    opts.push_back(oi);
  }
  auto s = testing::StartMeshes(opts);
  ASSERT_TRUE(s.all_ok()) << testing::Msg(s.connect[0]);
  std::vector<std::uint8_t> big(200000, 3), got(200000);
  ASSERT_TRUE(s.meshes[2]->Send(0, big).ok());  // several 64 KiB frames
  ASSERT_TRUE(s.meshes[2]->Flush().ok());
  ASSERT_TRUE(s.meshes[0]->Recv(2, got).ok());
  EXPECT_EQ(got, big);
}

}  // namespace
}  // namespace mpcache::net
