// NetDelay.*: deploy/netns/netns.sh with a profile whose delay comes from mpcache-netdelay
// (--userspace-delay: the userspace switch is what is tested, whether or not the kernel has
// netem). Each test makes its own topology under a prefix unique to this process and removes
// it in TearDown, whatever happened. The checks are lower bounds and correctness, never
// tight timings: a frame is held for the whole one-way delay each way (a ping's round trip
// is at least twice it), and a TCP stream (GSO super-frames, checksum offload left to the
// receiver) arrives byte for byte.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/ip_icmp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <future>
#include <random>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr const char* kParty0 = "10.77.0.1";  // netns.sh's default subnet
constexpr const char* kClient = "10.77.0.5";
constexpr std::uint16_t kPort = 5201;
constexpr std::size_t kStreamBytes = std::size_t{8} << 20;

// The output (stdout and stderr) and exit status of a shell command.
struct Shell {
  int status = -1;
  std::string output;
};

Shell RunShell(const std::string& command) {
  Shell out;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return out;
  std::array<char, 4096> chunk{};
  std::size_t n = 0;
  while ((n = fread(chunk.data(), 1, chunk.size(), pipe)) > 0) out.output.append(chunk.data(), n);
  out.status = pclose(pipe);
  return out;
}

// A file descriptor closed on scope exit.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

// Runs fn() on a thread of its own that first joins the network namespace `ns` (setns moves
// the calling thread only); returns its result, or `failed` if the namespace cannot be joined.
template <typename T, typename Fn>
T InNamespace(const std::string& ns, T failed, Fn fn) {
  return std::async(std::launch::async,
                    [&]() -> T {
                      const Fd target(open(("/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC));
                      if (target.fd < 0 || setns(target.fd, CLONE_NEWNET) != 0) return failed;
                      return fn();
                    })
      .get();
}

std::uint16_t InternetChecksum(const std::uint8_t* data, std::size_t len) {
  std::uint32_t sum = 0;
  for (std::size_t i = 0; i + 1 < len; i += 2) sum += (data[i] << 8) | data[i + 1];
  if (len % 2 != 0) sum += data[len - 1] << 8;
  while ((sum >> 16) != 0) sum = (sum & 0xffff) + (sum >> 16);
  return htons(static_cast<std::uint16_t>(~sum));
}

struct Pings {
  std::string error;
  std::vector<double> rtt_ms;
};

// `count` ICMP echo requests to `to`, one at a time, each answered within 2 s.
Pings Ping(const char* to, int count) {
  Pings out;
  const Fd fd(socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP));
  if (fd.fd < 0) return {"raw ICMP socket: " + std::string(std::strerror(errno)), {}};
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  inet_pton(AF_INET, to, &addr.sin_addr);
  const auto id = static_cast<std::uint16_t>(getpid());
  for (int seq = 1; seq <= count; ++seq) {
    std::array<std::uint8_t, 64> request{};
    icmphdr header{};
    header.type = ICMP_ECHO;
    header.un.echo.id = htons(id);
    header.un.echo.sequence = htons(static_cast<std::uint16_t>(seq));
    std::memcpy(request.data(), &header, sizeof(header));
    header.checksum = InternetChecksum(request.data(), request.size());
    std::memcpy(request.data(), &header, sizeof(header));
    const auto sent_at = Clock::now();
    if (sendto(fd.fd, request.data(), request.size(), 0, reinterpret_cast<const sockaddr*>(&addr),
               sizeof(addr)) < 0) {
      return {"sendto: " + std::string(std::strerror(errno)), out.rtt_ms};
    }
    const auto give_up = sent_at + 2s;
    bool answered = false;
    while (!answered && Clock::now() < give_up) {
      pollfd p{fd.fd, POLLIN, 0};
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(give_up - Clock::now()).count();
      if (poll(&p, 1, static_cast<int>(std::max<std::int64_t>(left, 1))) <= 0) continue;
      std::array<std::uint8_t, 1500> reply{};
      const ssize_t got = recv(fd.fd, reply.data(), reply.size(), 0);
      const auto at = Clock::now();
      if (got < static_cast<ssize_t>(sizeof(iphdr))) continue;
      const std::size_t ihl = std::size_t{reply[0] & 0x0fU} * 4;  // raw sockets see the IP header
      if (static_cast<std::size_t>(got) < ihl + sizeof(icmphdr)) continue;
      icmphdr answer{};
      std::memcpy(&answer, reply.data() + ihl, sizeof(answer));
      if (answer.type != ICMP_ECHOREPLY || ntohs(answer.un.echo.id) != id ||
          ntohs(answer.un.echo.sequence) != seq) {
        continue;
      }
      out.rtt_ms.push_back(std::chrono::duration<double, std::milli>(at - sent_at).count());
      answered = true;
    }
    if (!answered) {
      out.error = "no echo reply to ping " + std::to_string(seq) + " within 2 s";
      return out;
    }
  }
  return out;
}

std::uint64_t Fnv1a(const std::vector<std::uint8_t>& bytes) {
  std::uint64_t h = 14695981039346656037ULL;
  for (const std::uint8_t b : bytes) h = (h ^ b) * 1099511628211ULL;
  return h;
}

struct Received {
  std::string error;
  std::vector<std::uint8_t> bytes;
};

// Waits until fd has `events` (poll) or the deadline passes; false at the deadline.
bool WaitFor(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    const int n = poll(&p, 1, static_cast<int>(left));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return false;
  }
}

std::string Errno(const std::string& what) {
  return what + ": " + std::strerror(errno);
}

// Accepts one connection on kPort and reads it to its end, by the deadline.
Received Receive(std::promise<void>* listening, Clock::time_point deadline) {
  const Fd listener(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  const int one = 1;
  setsockopt(listener.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(kPort);
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  if (bind(listener.fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(listener.fd, 1) != 0) {
    listening->set_value();
    return {Errno("bind/listen"), {}};
  }
  listening->set_value();
  if (!WaitFor(listener.fd, POLLIN, deadline)) return {"no connection by the deadline", {}};
  const Fd conn(accept4(listener.fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
  if (conn.fd < 0) return {Errno("accept"), {}};
  Received out;
  std::vector<std::uint8_t> chunk(std::size_t{1} << 16);
  for (;;) {
    if (!WaitFor(conn.fd, POLLIN, deadline)) {
      out.error = "only " + std::to_string(out.bytes.size()) + " bytes by the deadline";
      return out;
    }
    const ssize_t got = recv(conn.fd, chunk.data(), chunk.size(), 0);
    if (got == 0) return out;
    if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (got < 0) {
      out.error = Errno("recv after " + std::to_string(out.bytes.size()) + " bytes");
      return out;
    }
    out.bytes.insert(out.bytes.end(), chunk.begin(), chunk.begin() + got);
  }
}

// Connects to kClient:kPort, sends `data` and closes its side, by the deadline; "" when
// the receiver read everything (it closes its side after the end of the stream).
std::string Send(const std::vector<std::uint8_t>& data, Clock::time_point deadline) {
  const Fd fd(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(kPort);
  inet_pton(AF_INET, kClient, &addr.sin_addr);
  if (connect(fd.fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0 &&
      errno != EINPROGRESS) {
    return Errno("connect");
  }
  if (!WaitFor(fd.fd, POLLOUT, deadline)) return "connect: no answer by the deadline";
  int error = 0;
  socklen_t len = sizeof(error);
  getsockopt(fd.fd, SOL_SOCKET, SO_ERROR, &error, &len);
  if (error != 0) return "connect: " + std::string(std::strerror(error));
  std::size_t done = 0;
  while (done < data.size()) {
    if (!WaitFor(fd.fd, POLLOUT, deadline)) {
      return "only " + std::to_string(done) + " bytes sent by the deadline";
    }
    const ssize_t n = send(fd.fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n < 0) return Errno("send after " + std::to_string(done) + " bytes");
    done += static_cast<std::size_t>(n);
  }
  shutdown(fd.fd, SHUT_WR);
  if (!WaitFor(fd.fd, POLLIN, deadline)) return "the receiver did not close by the deadline";
  return "";
}

bool Alive(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string pid_field, comm, state;
  return static_cast<bool>(stat >> pid_field >> comm >> state) && state != "Z";
}

class NetDelay : public ::testing::Test {
 protected:
  void TearDown() override {
    if (up_) Script("down");
  }

  // netns.sh COMMAND --prefix P ... with mpcache-netdelay as the delay, whatever the kernel.
  Shell Script(const std::string& command) {
    return RunShell(std::string(MPCACHE_NETNS_SH) + " " + command + " --prefix " + prefix_ +
                    " --netdelay " + MPCACHE_NETDELAY_BIN);
  }

  // Brings the topology up with `profile`; fatal on failure (check with ASSERT_NO_FATAL_FAILURE).
  void Up(const std::string& profile) {
    ASSERT_EQ(getuid(), 0U) << "network namespaces need root (CAP_NET_ADMIN)";
    up_ = true;
    const Shell up = Script("up --userspace-delay --profile " + profile);
    ASSERT_EQ(up.status, 0) << up.output;
    EXPECT_NE(up.output.find("userspace (mpcache-netdelay"), std::string::npos) << up.output;
    std::ifstream pidfile("/run/mpcache-netns/" + prefix_ + ".pid");
    ASSERT_TRUE(pidfile >> netdelay_pid_) << "no pidfile for " << prefix_;
    ASSERT_TRUE(Alive(netdelay_pid_))
        << "mpcache-netdelay (pid " << netdelay_pid_ << ") is not running";
  }

  Pings PingParty0(int count) {
    return InNamespace(prefix_ + "-client", Pings{"cannot join " + prefix_ + "-client", {}},
                       [&] { return Ping(kParty0, count); });
  }

  // Names unique to this process ("t<pid>" is tests/e2e/netns.cc's), 8 characters at most.
  std::string prefix_ = "nd" + std::to_string(getpid() % 1000000);
  bool up_ = false;
  int netdelay_pid_ = -1;
};

TEST_F(NetDelay, WanPingRoundTripIsAtLeastTwiceTheOneWayDelay) {
  ASSERT_NO_FATAL_FAILURE(Up("wan"));
  const Pings pings = PingParty0(5);
  ASSERT_TRUE(pings.error.empty()) << pings.error;
  for (const double rtt : pings.rtt_ms) {
    EXPECT_GE(rtt, 40.0) << "a wan frame is held 20 ms each way";
    EXPECT_LT(rtt, 400.0);
  }
  std::string all;
  for (const double rtt : pings.rtt_ms) all += std::to_string(rtt) + " ";
  RecordProperty("wan_ping_rtt_ms", all);
  std::printf("wan ping RTTs (ms, the first with ARP): %s\n", all.c_str());
}

TEST_F(NetDelay, WanTcpStreamArrivesIntact) {
  ASSERT_NO_FATAL_FAILURE(Up("wan"));
  std::vector<std::uint8_t> data(kStreamBytes);
  std::mt19937_64 rng(20240601);
  for (std::size_t i = 0; i < data.size(); i += 8) {
    const std::uint64_t word = rng();
    std::memcpy(data.data() + i, &word, std::min<std::size_t>(8, data.size() - i));
  }
  std::promise<void> listening;
  std::future<void> ready = listening.get_future();
  // 8 MiB take about a second at 100 Mbit/s; a switch that mangles offloaded frames stalls
  // the stream (or its handshake) until the deadline.
  const auto start = Clock::now();
  const auto deadline = start + 60s;
  auto receiver = std::async(std::launch::async, [&] {
    return InNamespace(prefix_ + "-client", Received{"cannot join " + prefix_ + "-client", {}},
                       [&] { return Receive(&listening, deadline); });
  });
  ASSERT_EQ(ready.wait_for(10s), std::future_status::ready) << "the receiver did not listen";
  const std::string sent = InNamespace(prefix_ + "-party0", std::string("cannot join party0"),
                                       [&] { return Send(data, deadline); });
  const Received got = receiver.get();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  ASSERT_TRUE(sent.empty()) << sent;
  ASSERT_TRUE(got.error.empty()) << got.error;
  ASSERT_EQ(got.bytes.size(), data.size());
  EXPECT_EQ(Fnv1a(got.bytes), Fnv1a(data));
  EXPECT_TRUE(got.bytes == data) << "the stream arrived altered";
  // 100 Mbit/s (tc tbf, 256 KB burst) is a floor on the time; no ceiling is asserted.
  EXPECT_GE(seconds, 0.5) << "8 MiB through a 100 Mbit/s link took too little time";
  std::printf("8 MiB party0 -> client over wan: %.2f s (%.1f Mbit/s)\n", seconds,
              static_cast<double>(data.size()) * 8 / seconds / 1e6);
}

TEST_F(NetDelay, LanPingAndDownRemovesEverything) {
  ASSERT_NO_FATAL_FAILURE(Up("lan"));
  const Pings pings = PingParty0(5);
  ASSERT_TRUE(pings.error.empty()) << pings.error;
  std::string all;
  for (const double rtt : pings.rtt_ms) {
    EXPECT_GE(rtt, 0.2) << "a lan frame is held 0.1 ms each way";
    EXPECT_LT(rtt, 400.0);
    all += std::to_string(rtt) + " ";
  }
  std::printf("lan ping RTTs (ms, the first with ARP): %s\n", all.c_str());

  const Shell down = Script("down");
  EXPECT_EQ(down.status, 0) << down.output;
  up_ = false;
  EXPECT_FALSE(Alive(netdelay_pid_)) << "mpcache-netdelay outlived down";
  const Shell list = RunShell("ip netns list");
  EXPECT_EQ(list.output.find(prefix_ + "-"), std::string::npos) << list.output;
  EXPECT_NE(access(("/run/mpcache-netns/" + prefix_ + ".pid").c_str(), F_OK), 0)
      << "down left the pidfile";
}

}  // namespace
