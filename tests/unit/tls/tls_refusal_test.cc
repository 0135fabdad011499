// A listening party refuses everything that is not a mutually authenticated TLS 1.3
// peer with the right certificate: `openssl s_client -tls1_2`, TLS 1.3 without a client
// certificate, TLS 1.3 with the client's (not a party's) certificate, and a raw TCP
// connection sending garbage. Afterwards the genuine peer still joins.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>

#include "tls_test_util.h"

namespace mpcache::net {
namespace {

using testing::Files;
using testing::Options;

// Runs `cmd` (with stdin from /dev/null, stderr folded in); returns its exit status.
int RunCommand(const std::string& cmd, std::string* output) {
  FILE* p = ::popen((cmd + " </dev/null 2>&1").c_str(), "r");
  if (p == nullptr) return -1;
  std::array<char, 4096> buf;
  std::size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) output->append(buf.data(), n);
  const int rc = ::pclose(p);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

std::string SClient(std::uint16_t port, const std::string& extra) {
  const auto ca = Files("party1").ca_file;
  return std::string("timeout 10 ") + MPCACHE_OPENSSL +
         " s_client -connect 127.0.0.1:" + std::to_string(port) + " -CAfile '" + ca + "' " + extra;
}

// Connects over plain TCP, sends bytes that are not a TLS ClientHello and reports
// whether the server closed the connection (within 5 s) without answering in kind.
bool RawGarbageIsDropped(std::uint16_t port, std::string* why) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool dropped = false;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    const char garbage[] = "GET / HTTP/1.0\r\n\r\n\x01\x02\x03";
    (void)::send(fd, garbage, sizeof(garbage), MSG_NOSIGNAL);
    char buf[4096];
    std::string got;
    for (;;) {
      const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      if (n == 0) {
        dropped = true;  // orderly close
        break;
      }
      if (n < 0) {
        dropped = (errno == ECONNRESET);
        *why = "recv: " + std::string(std::strerror(errno));
        break;
      }
      got.append(buf, static_cast<std::size_t>(n));
    }
    // A TLS alert record (content type 21) is an acceptable answer; application data is not.
    if (!got.empty() && static_cast<unsigned char>(got[0]) != 21) dropped = false;
  } else {
    *why = "connect failed";
  }
  ::close(fd);
  return dropped;
}

TEST(TlsRefusal, NonTls13AndUnauthenticatedPeersAreRefusedThenTheMeshForms) {
  ASSERT_FALSE(testing::CertDir().empty()) << "gen-certs.sh failed";
  auto o0 = Options(0, 2);
  o0.connect_timeout = std::chrono::milliseconds(30000);
  o0.handshake_timeout = std::chrono::milliseconds(1500);
  auto m0 = TlsMesh::Listen(o0);
  ASSERT_TRUE(m0.ok()) << m0.error().ToString();
  const std::uint16_t port = (*m0)->listen_port();
  std::vector<Endpoint> addrs = {{"127.0.0.1", port}, {"127.0.0.1", 0}};
  Status s0 = Internal("not run");
  std::unique_ptr<TlsMesh> m1;
  {
    std::jthread t0([&] { s0 = (*m0)->Connect(addrs); });
    // Whatever happens below, party 1 joins at the end so t0 never waits 30 s.
    struct JoinAtEnd {
      std::function<void()> f;
      ~JoinAtEnd() { f(); }
    } join{[&] {
      auto o1 = Options(1, 2);
      o1.addresses = addrs;
      auto r = TlsMesh::Create(o1);
      EXPECT_TRUE(r.ok()) << r.error().ToString();
      if (r.ok()) m1 = std::move(r).value();
    }};

    const auto p1 = Files("party1");
    const std::string party1_cert = "-cert '" + p1.cert_file + "' -key '" + p1.key_file + "'";
    std::string out;
    int rc = RunCommand(SClient(port, "-tls1_2 " + party1_cert), &out);
    EXPECT_NE(rc, 0) << out;
    EXPECT_NE(out.find("alert protocol version"), std::string::npos) << out;
    EXPECT_NE(out.find("Cipher is (NONE)"), std::string::npos) << out;  // no session

    out.clear();
    rc = RunCommand(SClient(port, "-tls1_3 -ign_eof"), &out);  // no client certificate
    EXPECT_NE(out.find("alert"), std::string::npos) << "rc " << rc << ": " << out;

    out.clear();
    const auto client = Files("client");
    rc = RunCommand(SClient(port, "-tls1_3 -ign_eof -cert '" + client.cert_file + "' -key '" +
                                      client.key_file + "'"),
                    &out);  // a valid certificate, but not a party's: dropped after the handshake
    EXPECT_NE(rc, 124) << "s_client was not disconnected: " << out;
    EXPECT_NE(rc, 0) << out;

    std::string why;
    EXPECT_TRUE(RawGarbageIsDropped(port, &why)) << why;
  }
  EXPECT_TRUE(s0.ok()) << testing::Msg(s0);
  ASSERT_NE(m1, nullptr);
  std::uint32_t v = 7;
  ASSERT_TRUE(m1->SendValues<std::uint32_t>(0, {&v, 1}).ok());
  ASSERT_TRUE(m1->Flush().ok());
  std::uint32_t got = 0;
  ASSERT_TRUE((*m0)->RecvValues<std::uint32_t>(1, {&got, 1}).ok());
  EXPECT_EQ(got, 7u);
}

}  // namespace
}  // namespace mpcache::net
