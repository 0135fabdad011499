// Whose certificate is it (RFC 6125 6.4.4)? A certificate with DNS subjectAltNames is
// identified by them alone, its CN is ignored; only a certificate without any is
// identified by its CN. Certificates made in the test (test_certs.h) whose CN and SAN
// disagree are refused by the listener (dealer, mesh), by the connecting side, and by a
// mesh; a certificate naming two roles is refused rather than taken for one of them.
#include <gtest/gtest.h>

#include <future>
#include <optional>

#include "test_certs.h"
#include "tls_test_util.h"

namespace mpcache::net {
namespace {

using testing::Dns;
using testing::Ip127;
using testing::KeyAndCert;
using testing::MakeCert;

const std::string kParty0 = PartyName(0), kParty1 = PartyName(1), kParty2 = PartyName(2);
const std::string kDealer(kDealerName), kClient(kClientName);

class CertificateIdentity : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_NE(ca_.cert, nullptr); }
  KeyAndCert Leaf(const std::vector<std::string>& cns, const std::vector<testing::San>& sans) {
    auto kc = MakeCert(cns, sans, &ca_);
    EXPECT_NE(kc.cert, nullptr);
    return kc;
  }
  KeyAndCert ca_ = MakeCert({"mpcache-test-ca"}, {}, nullptr);
};

TEST_F(CertificateIdentity, DnsSansReplaceTheCn) {
  auto c = Leaf({kParty1}, {Dns(kParty2), Dns("localhost"), Ip127()});
  EXPECT_EQ(CertificateIdentities(c.cert.get()), (std::vector<std::string>{kParty2, "localhost"}));
  EXPECT_FALSE(CertificateHasName(c.cert.get(), kParty1));  // the CN is not an identity
  EXPECT_TRUE(CertificateHasName(c.cert.get(), kParty2));
  auto host_only = Leaf({kParty1}, {Dns("party1.example.org")});
  EXPECT_FALSE(CertificateHasName(host_only.cert.get(), kParty1));
}

TEST_F(CertificateIdentity, TheCnCountsOnlyWithoutDnsSans) {
  EXPECT_TRUE(CertificateHasName(Leaf({kParty1}, {}).cert.get(), kParty1));
  EXPECT_TRUE(CertificateHasName(Leaf({kParty1}, {Ip127()}).cert.get(), kParty1));
  // Several CNs: the most specific (last) one, not any of them.
  auto two = Leaf({kParty2, kParty1}, {});
  EXPECT_EQ(CertificateIdentities(two.cert.get()), std::vector<std::string>{kParty1});
  EXPECT_FALSE(CertificateHasName(two.cert.get(), kParty2));
  EXPECT_TRUE(CertificateIdentities(Leaf({}, {}).cert.get()).empty());
}

TEST_F(CertificateIdentity, NoWildcardsNoEmbeddedNulDnsCaseRules) {
  EXPECT_FALSE(CertificateHasName(Leaf({}, {Dns("mpcache-party-*")}).cert.get(), kParty1));
  EXPECT_FALSE(CertificateHasName(Leaf({}, {Dns("*")}).cert.get(), kParty1));
  const std::string nul = kParty1 + std::string(1, '\0') + ".evil.example";
  EXPECT_FALSE(CertificateHasName(Leaf({}, {Dns(nul)}).cert.get(), kParty1));
  EXPECT_TRUE(CertificateHasName(Leaf({}, {Dns("MPCache-Party-1")}).cert.get(), kParty1));
  EXPECT_FALSE(CertificateHasName(Leaf({}, {Dns(kParty1)}).cert.get(), ""));
}

// One TLS connection on loopback between a listener presenting `server` and accepting
// `allowed`, and a client presenting `client` that expects `expected`.
struct Outcome {
  Status accepted = Internal("no answer");
  std::string accepted_as;
  Status connected = Internal("no answer");
};

class IdentityHandshake : public CertificateIdentity {
 protected:
  void SetUp() override {
    CertificateIdentity::SetUp();
    ASSERT_FALSE(dir_.path().empty());
    ca_file_ = testing::WritePem(ca_, dir_.path(), "ca", "").cert_file;
  }

  TlsFiles Files(const std::string& file, const std::vector<std::string>& cns,
                 const std::vector<testing::San>& sans) {
    return testing::WritePem(Leaf(cns, sans), dir_.path(), file, ca_file_);
  }

  Outcome Handshake(const TlsFiles& server, std::vector<std::string> allowed,
                    const TlsFiles& client, const std::string& expected) {
    Outcome out;
    auto sctx = MakeTlsContext(server);
    auto cctx = MakeTlsContext(client);
    EXPECT_TRUE(sctx.ok()) << sctx.error().ToString();
    EXPECT_TRUE(cctx.ok()) << cctx.error().ToString();
    if (!sctx.ok() || !cctx.ok()) return out;
    asio::io_context io;
    auto listener = TlsListener::Bind(io, **sctx, Endpoint{"127.0.0.1", 0});
    EXPECT_TRUE(listener.ok());
    if (!listener.ok()) return out;
    std::promise<Result<AcceptedTls>> acc;
    std::promise<Result<std::unique_ptr<TlsStream>>> con;
    (*listener)->Start(std::move(allowed), std::chrono::milliseconds(3000),
                       [&acc, once = std::make_shared<bool>(false)](Result<AcceptedTls> a) {
                         if (!*once) acc.set_value(std::move(a));
                         *once = true;
                       });
    AsyncConnectTls(io, **cctx, Endpoint{"127.0.0.1", (*listener)->port()}, expected,
                    Clock::now() + std::chrono::seconds(5),
                    [&con](Result<std::unique_ptr<TlsStream>> s) { con.set_value(std::move(s)); });
    // Declared before the io thread: they are destroyed after it stopped, before `io`.
    std::optional<Result<AcceptedTls>> a;
    std::optional<Result<std::unique_ptr<TlsStream>>> c;
    auto guard = asio::make_work_guard(io);
    std::jthread runner([&io] { io.run(); });
    auto fa = acc.get_future();
    auto fc = con.get_future();
    if (fa.wait_for(std::chrono::seconds(10)) == std::future_status::ready &&
        fc.wait_for(std::chrono::seconds(10)) == std::future_status::ready) {
      a = fa.get();
      c = fc.get();
      out.accepted = a->ok() ? Status::Ok() : Status(a->error());
      if (a->ok()) out.accepted_as = (*a)->peer_name;
      out.connected = c->ok() ? Status::Ok() : Status(c->error());
    } else {
      ADD_FAILURE() << "the handshake did not finish";
    }
    asio::post(io, [&] { (*listener)->Close(); });
    guard.reset();
    asio::post(io, [&io] { io.stop(); });
    return out;
  }

  testing::TempDir dir_;
  std::string ca_file_;
};

bool Says(const Status& s, const std::string& what) {
  return !s.ok() && s.error().message().find(what) != std::string::npos;
}

TEST_F(IdentityHandshake, ListenerRefusesACnNamingTheRoleWhenTheSansDoNot) {
  const auto dealer = Files("dealer", {kDealer}, {Dns(kDealer)});
  const std::vector<std::string> parties = {kParty0, kParty1, kParty2};
  // A host certificate (SAN names a host) whose CN was set to a party's name.
  auto o =
      Handshake(dealer, parties, Files("host", {kParty1}, {Dns("localhost"), Ip127()}), kDealer);
  EXPECT_TRUE(Says(o.accepted, "none of the expected")) << testing::Msg(o.accepted);
  EXPECT_TRUE(Says(o.accepted, "CN is ignored")) << testing::Msg(o.accepted);
  // The client's certificate with a party's name in its CN: still the client.
  o = Handshake(dealer, parties, Files("client", {kParty1}, {Dns(kClient)}), kDealer);
  EXPECT_TRUE(Says(o.accepted, "SAN=mpcache-client")) << testing::Msg(o.accepted);
  EXPECT_TRUE(Says(o.accepted, "refused")) << testing::Msg(o.accepted);
  // A name with a NUL and a line break: refused, and shown escaped (no forged log line).
  const std::string nul = kParty1 + std::string("\0\n.evil", 7);
  o = Handshake(dealer, parties, Files("nul", {}, {Dns(nul)}), kDealer);
  EXPECT_TRUE(Says(o.accepted, "SAN=mpcache-party-1\\x00\\x0a.evil, which is none"))
      << testing::Msg(o.accepted);
}

TEST_F(IdentityHandshake, ConnectorRefusesACnNamingTheRoleWhenTheSansDoNot) {
  const auto party1 = Files("party1", {kParty1}, {Dns(kParty1)});
  const auto fake_dealer = Files("fake", {kDealer}, {Dns(kParty2)});  // party 2's, really
  auto o = Handshake(fake_dealer, {kParty1}, party1, kDealer);
  EXPECT_TRUE(Says(o.connected, "expected mpcache-dealer; refused")) << testing::Msg(o.connected);
  EXPECT_TRUE(Says(o.connected, "CN is ignored")) << testing::Msg(o.connected);
}

TEST_F(IdentityHandshake, TheSanDecidesTheRoleWhateverTheCnSays) {
  const auto dealer = Files("dealer", {kDealer}, {Dns(kDealer)});
  const auto p1 = Files("p1", {kParty2}, {Dns(kParty1), Dns("localhost")});  // CN says 2
  auto o = Handshake(dealer, {kParty1, kParty2}, p1, kDealer);
  EXPECT_TRUE(o.accepted.ok()) << testing::Msg(o.accepted);
  EXPECT_EQ(o.accepted_as, kParty1);
  o = Handshake(dealer, {kParty2}, p1, kDealer);  // expecting the CN's role: refused
  EXPECT_TRUE(Says(o.accepted, "none of the expected mpcache-party-2")) << testing::Msg(o.accepted);
  // And on the connecting side: a dealer whose CN names party 0.
  const auto d2 = Files("d2", {kParty0}, {Dns(kDealer)});
  o = Handshake(d2, {kParty1}, p1, kDealer);
  EXPECT_TRUE(o.connected.ok()) << testing::Msg(o.connected);
  o = Handshake(d2, {kParty1}, p1, kParty0);
  EXPECT_TRUE(Says(o.connected, "expected mpcache-party-0; refused")) << testing::Msg(o.connected);
}

TEST_F(IdentityHandshake, ACertificateWithoutSansIsIdentifiedByItsCn) {
  const auto dealer = Files("dealer", {kDealer}, {});
  auto o = Handshake(dealer, {kParty0, kParty1}, Files("p1", {kParty1}, {}), kDealer);
  EXPECT_TRUE(o.accepted.ok()) << testing::Msg(o.accepted);
  EXPECT_EQ(o.accepted_as, kParty1);
  EXPECT_TRUE(o.connected.ok()) << testing::Msg(o.connected);
}

TEST_F(IdentityHandshake, ACertificateNamingTwoRolesIsRefused) {
  const auto dealer = Files("dealer", {kDealer}, {Dns(kDealer)});
  const auto both = Files("both", {kParty0}, {Dns(kParty0), Dns(kParty1)});
  auto o = Handshake(dealer, {kParty0, kParty1, kParty2}, both, kDealer);
  EXPECT_TRUE(Says(o.accepted, "names several roles (mpcache-party-0, mpcache-party-1)"))
      << testing::Msg(o.accepted);
  o = Handshake(dealer, {kParty1}, both, kDealer);  // only one of them is allowed here
  EXPECT_TRUE(o.accepted.ok()) << testing::Msg(o.accepted);
}

TEST_F(IdentityHandshake, MeshRefusesAPartyWhoseCnAloneNamesIt) {
  auto o0 = testing::Options(0, 2);
  auto o1 = testing::Options(1, 2);
  o0.tls = Files("party0", {kParty0}, {Dns(kParty0)});
  o1.tls = Files("party1", {kParty1}, {Dns(kParty2)});  // party 2's certificate, CN "1"
  for (auto* o : {&o0, &o1}) {
    o->connect_timeout = std::chrono::milliseconds(900);
    o->handshake_timeout = std::chrono::milliseconds(800);
  }
  auto s = testing::StartMeshes({o0, o1});
  ASSERT_EQ(s.connect.size(), 2u);
  EXPECT_FALSE(s.connect[1].ok());
  EXPECT_TRUE(Says(s.connect[0], "none of the expected mpcache-party-1; refused"))
      << testing::Msg(s.connect[0]);
}

}  // namespace
}  // namespace mpcache::net
