// The client CLI against parties that lie to it (issue 15): three fake parties, written here,
// listen with the real party certificates and answer the client's Generate with what an
// honest party never sends — a heartbeat of another session, a queue position after the
// request started, a flood of positions. The client must refuse each, naming the party,
// and exit within seconds; a flood must not flood its terminal.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <mutex>
#include <thread>

#include "daemon/client_protocol.h"
#include "daemon/sync_link.h"
#include "e2e/cluster.h"
#include "net/tls/tls_connector.h"
#include "net/tls/tls_context.h"

namespace mpcache::e2e {
namespace {

namespace cp = daemon::client_proto;
using namespace std::chrono_literals;

// What a fake party sends after it read the client's Generate.
using Script = std::function<void(int party, daemon::SyncLink& link, const cp::Generate& g)>;

class FakeParties {
 public:
  FakeParties(Cluster& c, Script script) : script_(std::move(script)) {
    work_.emplace(net::asio::make_work_guard(io_));
    io_thread_ = std::thread([this] { io_.run(); });
    for (int p = 0; p < 3; ++p) {
      const std::string base = c.cert_dir() + "/party" + std::to_string(p);
      auto ctx = net::MakeTlsContext({base + ".crt", base + ".key", c.cert_dir() + "/ca.crt"});
      EXPECT_TRUE(ctx.ok()) << ctx.error().ToString();
      if (!ctx.ok()) return;
      ctx_[static_cast<std::size_t>(p)] = std::move(ctx).value();
      auto l = net::TlsListener::Bind(io_, *ctx_[static_cast<std::size_t>(p)],
                                      {"127.0.0.1", static_cast<std::uint16_t>(c.client_port(p))});
      EXPECT_TRUE(l.ok()) << l.error().ToString();
      if (!l.ok()) return;
      listeners_[static_cast<std::size_t>(p)] = std::move(l).value();
      listeners_[static_cast<std::size_t>(p)]->Start(
          {std::string(net::kClientName)}, 5s, [this, p](Result<net::AcceptedTls> a) {
            if (!a.ok()) return;
            std::lock_guard<std::mutex> lock(mu_);
            threads_.emplace_back(
                [this, p, a = std::move(a).value()]() mutable { Serve(p, std::move(a)); });
          });
    }
  }
  ~FakeParties() {
    std::promise<void> closed;
    net::asio::post(io_, [this, &closed] {
      for (auto& l : listeners_) {
        if (l) l->Close();
      }
      closed.set_value();
    });
    closed.get_future().wait();
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& t : threads_) t.join();
    }
    work_.reset();
    io_.stop();
    io_thread_.join();
  }

 private:
  void Serve(int p, net::AcceptedTls a) {
    daemon::SyncLink link(io_, std::move(a.stream), 0, std::size_t{1} << 20, "the client");
    auto m = link.Recv(10s);
    if (!m.ok()) return;
    auto g = cp::Decode<cp::Generate>(*m);
    if (!g.ok()) return;
    script_(p, link, *g);
    (void)link.Recv(20s);  // until the client hangs up
    link.CloseNow();
  }

  Script script_;
  net::asio::io_context io_;
  std::optional<net::asio::executor_work_guard<net::asio::io_context::executor_type>> work_;
  std::thread io_thread_;
  std::array<std::unique_ptr<net::asio::ssl::context>, 3> ctx_;
  std::array<std::unique_ptr<net::TlsListener>, 3> listeners_;
  std::mutex mu_;
  std::vector<std::thread> threads_;
};

struct ClientRun {
  std::optional<int> code;
  std::string err;
  std::chrono::steady_clock::duration took{};
};

ClientRun RunClientAgainst(Cluster& c, const Script& script, const std::string& tag) {
  FakeParties parties(c, script);
  const std::string out = c.dir() + "/" + tag + ".out", err = c.dir() + "/" + tag + ".err";
  const auto t0 = std::chrono::steady_clock::now();
  Process client({MPCACHE_CLIENT_BIN, "generate", "--config", c.client_config(), "--prompt",
                  "Once upon a time", "--max-tokens", "8"},
                 out, err);
  ClientRun r;
  r.code = client.Wait(60s);
  r.took = std::chrono::steady_clock::now() - t0;
  r.err = ReadFile(err);
  return r;
}

void ExpectRefused(const ClientRun& r, const std::string& what) {
  ASSERT_TRUE(r.code.has_value()) << "the client did not exit";
  EXPECT_NE(*r.code, 0);
  EXPECT_NE(r.err.find(what), std::string::npos) << r.err;
  // Refused at once (plus the 1.5 s the others get to report), not after a receive timeout.
  EXPECT_LT(r.took, 8s);
}

TEST(ClientGuard, AQueuePositionOfAnotherSessionIsRefusedNamingTheParty) {
  Cluster c;
  ASSERT_TRUE(c.ok());
  const auto r = RunClientAgainst(
      c,
      [](int p, daemon::SyncLink& link, const cp::Generate& g) {
        if (p == 1) (void)link.Send(cp::Encode(cp::Queued{g.session ^ 1, 0}));
      },
      "queued-other");
  ExpectRefused(r, "party 1 sent a Queued of another session");
}

TEST(ClientGuard, AHeartbeatOfAnotherSessionIsRefusedNamingTheParty) {
  Cluster c;
  ASSERT_TRUE(c.ok());
  const auto r = RunClientAgainst(
      c,
      [](int p, daemon::SyncLink& link, const cp::Generate& g) {
        if (p == 2) (void)link.Send(cp::Encode(cp::Progress{g.session + 1, 1}));
      },
      "progress-other");
  ExpectRefused(r, "party 2 sent a Progress of another session");
}

TEST(ClientGuard, AQueuePositionAfterTheRequestStartedIsRefused) {
  Cluster c;
  ASSERT_TRUE(c.ok());
  const auto r = RunClientAgainst(
      c,
      [](int p, daemon::SyncLink& link, const cp::Generate& g) {
        if (p != 0) return;
        cp::SeedShare s;
        s.session = g.session;
        s.frac_bits = 16;
        (void)link.Send(cp::Encode(s));
        (void)link.Send(cp::Encode(cp::Queued{g.session, 3}));
      },
      "queued-late");
  ExpectRefused(r, "party 0 said the request is queued after it started");
}

TEST(ClientGuard, AFloodOfQueuePositionsNeitherStallsNorFloodsTheTerminal) {
  // Party 0 sends 20000 positions, rising and falling, then refuses the request: the client
  // ends with party 0's refusal at once, having printed the falling counts only.
  Cluster c;
  ASSERT_TRUE(c.ok());
  const auto r = RunClientAgainst(
      c,
      [](int p, daemon::SyncLink& link, const cp::Generate& g) {
        if (p != 0) return;
        for (std::uint32_t i = 0; i < 20000; ++i) {
          if (!link.Send(cp::Encode(cp::Queued{g.session, 5 + i % 7})).ok()) return;
        }
        cp::ErrorMsg e;
        e.session = g.session;
        e.reporter = 0;
        e.message = "party 0: done flooding";
        (void)link.Send(cp::Encode(e));
      },
      "flood");
  ExpectRefused(r, "party 0: done flooding");
  std::size_t lines = 0;
  for (const char ch : r.err) lines += ch == '\n' ? 1 : 0;
  EXPECT_LT(lines, 20u) << r.err;
  EXPECT_NE(r.err.find("queued, 5 request(s) ahead"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace mpcache::e2e
