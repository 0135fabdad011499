// Issue 10 against the mpcache-dealer process over its real transport (TLS, party
// certificates, framed dealer messages): the crafted requests a party sent to crash it —
// a matrix mask of (2^62 + 1) x 4 (wraps to 4 elements) then a left-side triple on it, a
// legal-looking 2^31-element mask — are refused with an error naming the field and the
// setting, and the dealer keeps serving: another session's well-formed request is answered
// with triples that reconstruct (c = a b, correct MACs). Before the fix the dealer died
// with SIGSEGV at the triple.
#include "preproc/dealer.h"

#include <gtest/gtest.h>

#include <optional>
#include <thread>

#include "daemon/dealer_protocol.h"
#include "daemon/sync_link.h"
#include "e2e/cluster.h"
#include "net/tls/tls_context.h"
#include "preproc/party_store.h"

namespace mpcache::e2e {
namespace {

using namespace std::chrono_literals;
using daemon::SyncLink;
using preproc::ItemType;
namespace dp = daemon::dealer_proto;
namespace asio = net::asio;

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

// One party's connection to the dealer, joined to `session`.
struct PartyLink {
  std::unique_ptr<asio::ssl::context> tls;
  std::unique_ptr<SyncLink> link;
  dp::Setup setup;
};

std::unique_ptr<PartyLink> JoinAs(Cluster& c, asio::io_context& io, int party,
                                  std::uint64_t session) {
  auto out = std::make_unique<PartyLink>();
  const std::string p = c.cert_dir() + "/party" + std::to_string(party);
  auto tls = net::MakeTlsContext({p + ".crt", p + ".key", c.cert_dir() + "/ca.crt"});
  EXPECT_TRUE(tls.ok()) << tls.error().ToString();
  if (!tls.ok()) return nullptr;
  out->tls = std::move(*tls);
  auto link = SyncLink::Connect(
      io, *out->tls, net::Endpoint{"127.0.0.1", static_cast<std::uint16_t>(c.dealer_port())},
      std::string(net::kDealerName), 0, 16 << 20, 10s, "the dealer");
  EXPECT_TRUE(link.ok()) << link.error().ToString();
  if (!link.ok()) return nullptr;
  out->link = std::move(*link);
  dp::Join j;
  j.session = session;
  j.party = static_cast<std::uint32_t>(party);
  j.security = preproc::Security::kMalicious;
  j.prompt_len = 1, j.steps = 2, j.vocab = 16;
  EXPECT_TRUE(out->link->Send(dp::Encode(j)).ok());
  auto answer = out->link->Recv(10s);
  EXPECT_TRUE(answer.ok()) << answer.error().ToString();
  if (!answer.ok()) return nullptr;
  auto setup = dp::DecodeSetup(*answer);
  EXPECT_TRUE(setup.ok()) << setup.error().ToString();
  if (!setup.ok()) return nullptr;
  out->setup = std::move(*setup);
  return out;
}

// Sends `req` under `seq` and reads the answer (the dealer's Error as an error).
Result<preproc::Batch> Ask(PartyLink& p, const preproc::BatchRequest& req, std::uint64_t seq) {
  MPCACHE_RETURN_IF_ERROR(p.link->Send(dp::Encode(dp::BatchRequest{req, seq})));
  MPCACHE_ASSIGN_OR_RETURN(auto answer, p.link->Recv(10s));
  return dp::DecodeBatch(answer);
}

void ExpectRefused(const Result<preproc::Batch>& r, std::initializer_list<const char*> words,
                   const std::string& what) {
  ASSERT_FALSE(r.ok()) << what << ": answered";
  EXPECT_NE(r.error().message().find("the dealer refused"), std::string::npos)
      << what << ": " << r.error().message();
  for (const char* w : words) {
    EXPECT_NE(r.error().message().find(w), std::string::npos)
        << what << ": \"" << r.error().message() << "\" does not name \"" << w << "\"";
  }
}

TEST(DealerDaemon, CraftedRequestsAreRefusedAndOtherSessionsAreStillServed) {
  Cluster c;
  ASSERT_TRUE(c.ok()) << c.dir();
  ASSERT_TRUE(c.StartDealer()) << c.Log("dealer");
  asio::io_context io;
  IoThread io_thread(io);

  // Session 0xA11: party 0 asks for the mask, party 1 for the left-side triple.
  auto p0 = JoinAs(c, io, 0, 0xA11);
  auto p1 = JoinAs(c, io, 1, 0xA11);
  auto p2 = JoinAs(c, io, 2, 0xA11);
  ASSERT_TRUE(p0 && p1 && p2);
  ExpectRefused(Ask(*p0, {.type = ItemType::kMatrixMask, .rows = (1ull << 62) + 1, .cols = 4}, 0),
                {"matrix-mask request: rows x cols", "overflows",
                 "pool.max_matrix_elements in the dealer's config"},
                "(2^62+1) x 4 mask");
  ExpectRefused(
      Ask(*p1,
          {.type = ItemType::kMatrixTriple, .mask_id = 0, .side = mpc::MaskSide::kLeft, .other = 4},
          0),
      {"matrix-triple request: mask_id 0", "ask for the matrix mask first"}, "left triple on #0");
  // Party 2: the legal-looking 2^31-element mask (~32 GiB at the dealer before the fix).
  ExpectRefused(
      Ask(*p2, {.type = ItemType::kMatrixMask, .rows = 1 << 15, .cols = 1 << 16}, 0),
      {"rows x cols = 2147483648", "exceeds the limit of 268435456", "pool.max_matrix_elements"},
      "2^31-element mask");
  // Still running half a second later (a crashing dealer is gone by then).
  const std::optional<int> exited = c.dealer()->Wait(500ms);
  ASSERT_FALSE(exited.has_value())
      << "the dealer exited with status " << exited.value_or(-1) << "\n"
      << c.Log("dealer");

  // Another session: three parties, 100 triples each; the dealer answers and the items
  // reconstruct.
  std::vector<std::unique_ptr<PartyLink>> parties;
  for (int p = 0; p < 3; ++p) {
    parties.push_back(JoinAs(c, io, p, 0xB22));
    ASSERT_TRUE(parties.back());
  }
  const std::size_t n = 100;
  mpc::u128 alpha = 0;
  std::vector<mpc::Triples<mpc::Spdz2k>> t;
  for (int p = 0; p < 3; ++p) {
    PartyLink& link = *parties[static_cast<std::size_t>(p)];
    preproc::PartyStore<mpc::Spdz2k> store(p, 3, link.setup.party_seed);
    alpha += store.mac_key_share();
    for (const auto& b : link.setup.client_batches) ASSERT_TRUE(store.Accept(b).ok());
    auto batch = Ask(link, {.type = ItemType::kTriple, .count = n}, 0);
    ASSERT_TRUE(batch.ok()) << batch.error().ToString() << "\n" << c.Log("dealer");
    ASSERT_TRUE(store.Accept(*batch).ok());
    t.push_back(store.GetTriples(n).value());
  }
  for (std::size_t i = 0; i < n; ++i) {
    mpc::u128 a = 0, b = 0, cc = 0, m = 0;
    for (const auto& x : t) a += x.a.v[i], b += x.b.v[i], cc += x.c.v[i], m += x.c.m[i];
    EXPECT_EQ(mpc::Low64(cc), mpc::Low64(a) * mpc::Low64(b)) << i;
    EXPECT_TRUE(m == alpha * cc) << "MAC of c at " << i;
  }
  EXPECT_TRUE(c.dealer()->running());
  const std::string log = c.Log("dealer");
  EXPECT_NE(log.find("rows x cols"), std::string::npos) << log;  // the refusals are logged
}

}  // namespace
}  // namespace mpcache::e2e
