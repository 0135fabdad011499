#include "tools/netdelay/delay_switch.h"

#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <deque>
#include <limits>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace mpcache::netdelay {
namespace {

// PACKET_VNET_HDR puts a struct virtio_net_hdr (10 bytes: flags, gso_type, hdr_len,
// gso_size, csum_start, csum_offset) before every frame read and expects one before every
// frame written; it is copied, never parsed. (<linux/virtio_net.h> does not compile as C++.)
constexpr std::size_t kVnetHdrLen = 10;
constexpr std::size_t kEthHdrLen = ETH_HLEN;
constexpr std::size_t kEtherTypeAt = 2 * std::size_t{ETH_ALEN};  // after the two MACs
// The largest frame read whole: a veth GSO super-frame is at most 64 KiB (gso_max_size);
// anything longer is counted as malformed.
constexpr std::size_t kMaxFrame = std::size_t{256} << 10;
constexpr int kSocketBuffer = 8 << 20;  // bytes, each way, per port
constexpr int kReadBurst = 64;          // frames read from one port before the others
constexpr std::size_t kMaxMacs = 4096;  // the learnt table is cleared when it is full
constexpr std::uint64_t kStopTag = std::numeric_limits<std::uint64_t>::max();
constexpr std::uint64_t kTimerTag = kStopTag - 1;
constexpr std::int64_t kNsPerSecond = 1'000'000'000;
constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();

std::string Errno(const std::string& what) {
  return what + ": " + std::strerror(errno);
}

// An owned file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { Reset(); }
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      Reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  void Reset() {
    if (fd_ >= 0) (void)close(fd_);
    fd_ = -1;
  }
  int fd_ = -1;
};

std::int64_t MonotonicNs() {
  timespec ts{};
  (void)clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t{ts.tv_sec} * kNsPerSecond + ts.tv_nsec;
}

// The virtio_net_hdr and the Ethernet frame after it, exactly as read; shared by the
// copies of a flooded frame.
using Frame = std::shared_ptr<const std::vector<std::uint8_t>>;

struct Queued {
  std::int64_t release_ns;  // CLOCK_MONOTONIC
  Frame frame;
};

struct Port {
  std::string name;
  int ifindex = 0;
  Fd fd;
  std::deque<Queued> queue;  // FIFO; release times ascend (one delay for every frame)
  std::size_t queued_bytes = 0;
  bool blocked = false;  // the send buffer is full: waiting for EPOLLOUT
};

std::uint64_t MacKey(const std::uint8_t* mac) {
  std::uint64_t key = 0;
  for (int i = 0; i < ETH_ALEN; ++i) key = (key << 8) | mac[i];
  return key;
}

bool IsGroupAddress(const std::uint8_t* mac) {
  return (mac[0] & 1U) != 0;  // multicast or broadcast
}

Status SetOption(int fd, int level, int option, int value, const std::string& what) {
  if (setsockopt(fd, level, option, &value, sizeof(value)) != 0) return IoError(Errno(what));
  return Status::Ok();
}

// A socket that sees every frame arriving on `ifindex` (and none of its own) and sends on it.
Result<Fd> OpenPort(const std::string& name, int ifindex) {
  // Protocol 0 until bind: an unbound ETH_P_ALL socket would see every interface's frames.
  Fd fd(socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) {
    return IoError(Errno("port " + name + ": socket(AF_PACKET) (needs root or CAP_NET_RAW)"));
  }
  const std::string at = "port " + name + ": setsockopt ";
  MPCACHE_RETURN_IF_ERROR(
      SetOption(fd.get(), SOL_PACKET, PACKET_VNET_HDR, 1, at + "PACKET_VNET_HDR"));
  MPCACHE_RETURN_IF_ERROR(
      SetOption(fd.get(), SOL_PACKET, PACKET_IGNORE_OUTGOING, 1, at + "PACKET_IGNORE_OUTGOING"));
  // Larger buffers than the default ~200 KiB (a few GSO frames); the FORCE variants need
  // CAP_NET_ADMIN, without it the plain ones (capped by net.core.[rw]mem_max) do.
  if (!SetOption(fd.get(), SOL_SOCKET, SO_RCVBUFFORCE, kSocketBuffer, "").ok()) {
    MPCACHE_RETURN_IF_ERROR(
        SetOption(fd.get(), SOL_SOCKET, SO_RCVBUF, kSocketBuffer, at + "SO_RCVBUF"));
  }
  if (!SetOption(fd.get(), SOL_SOCKET, SO_SNDBUFFORCE, kSocketBuffer, "").ok()) {
    MPCACHE_RETURN_IF_ERROR(
        SetOption(fd.get(), SOL_SOCKET, SO_SNDBUF, kSocketBuffer, at + "SO_SNDBUF"));
  }
  packet_mreq promisc{};
  promisc.mr_ifindex = ifindex;
  promisc.mr_type = PACKET_MR_PROMISC;
  if (setsockopt(fd.get(), SOL_PACKET, PACKET_ADD_MEMBERSHIP, &promisc, sizeof(promisc)) != 0) {
    return IoError(Errno(at + "PACKET_ADD_MEMBERSHIP (promiscuous)"));
  }
  sockaddr_ll addr{};
  addr.sll_family = AF_PACKET;
  addr.sll_protocol = htons(ETH_P_ALL);
  addr.sll_ifindex = ifindex;
  if (bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    return IoError(Errno("port " + name + ": bind"));
  }
  return fd;
}

Status EpollControl(int epoll, int op, int fd, std::uint32_t events, std::uint64_t tag) {
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = tag;
  if (epoll_ctl(epoll, op, fd, &ev) != 0) return IoError(Errno("epoll_ctl"));
  return Status::Ok();
}

}  // namespace

Status ValidateOptions(const SwitchOptions& options) {
  if (options.ports.size() < 2) {
    return InvalidArgument("give at least two --port interfaces (got " +
                           std::to_string(options.ports.size()) + ")");
  }
  std::unordered_set<std::string> seen;
  for (const std::string& name : options.ports) {
    if (name.empty() || name == "." || name == "..") {
      return InvalidArgument("--port '" + name + "' is not an interface name");
    }
    if (name.size() >= IFNAMSIZ) {
      return InvalidArgument("--port '" + name + "': interface names have at most " +
                             std::to_string(IFNAMSIZ - 1) + " characters");
    }
    if (name.find_first_of("/: \t\n") != std::string::npos) {
      return InvalidArgument("--port '" + name + "': an interface name has no '/', ':' or space");
    }
    if (!seen.insert(name).second) return InvalidArgument("--port '" + name + "' given twice");
  }
  if (options.delay.count() < 0 || options.delay > kMaxDelay) {
    return InvalidArgument("--delay-us must be between 0 and " + std::to_string(kMaxDelay.count()) +
                           " (60 s), got " + std::to_string(options.delay.count()));
  }
  if (options.max_queue_bytes < kMinQueueBytes || options.max_queue_bytes > kMaxQueueBytes) {
    return InvalidArgument("--max-queue-bytes must be between " + std::to_string(kMinQueueBytes) +
                           " and " + std::to_string(kMaxQueueBytes) + ", got " +
                           std::to_string(options.max_queue_bytes));
  }
  return Status::Ok();
}

struct DelaySwitch::State {
  SwitchOptions options;
  std::vector<Port> ports;
  Fd epoll;
  Fd timer;
  std::int64_t timer_at = kNever;  // when the timer is armed for; kNever: disarmed
  std::unordered_map<std::uint64_t, std::size_t> macs;  // source MAC -> port index
  std::vector<std::uint8_t> buffer;
  SwitchStats stats;

  void Receive(std::size_t in);
  void Forward(std::size_t in, const Frame& frame, std::int64_t arrival_ns);
  void Enqueue(std::size_t out, const Frame& frame, std::int64_t release_ns);
  Status ReleaseDue(std::int64_t now_ns);
  Status ArmTimer();
  Status Watch(std::size_t port, bool writable) {
    const std::uint32_t events = EPOLLIN | (writable ? static_cast<std::uint32_t>(EPOLLOUT) : 0U);
    return EpollControl(epoll.get(), EPOLL_CTL_MOD, ports[port].fd.get(), events, port);
  }
};

void DelaySwitch::State::Receive(std::size_t in) {
  for (int n = 0; n < kReadBurst; ++n) {
    iovec iov{buffer.data(), buffer.size()};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    // MSG_TRUNC: the return value is the frame's whole length even when it did not fit.
    const ssize_t got = recvmsg(ports[in].fd.get(), &msg, MSG_TRUNC);
    if (got < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) ++stats.receive_errors;  // (clears it)
      return;
    }
    const std::int64_t arrival = MonotonicNs();
    ++stats.received;
    const auto len = static_cast<std::size_t>(got);
    if ((msg.msg_flags & MSG_TRUNC) != 0 || len > buffer.size() || len < kVnetHdrLen + kEthHdrLen) {
      ++stats.dropped_malformed;
      continue;
    }
    const auto begin = buffer.begin();
    Forward(in,
            std::make_shared<const std::vector<std::uint8_t>>(
                begin, begin + static_cast<std::ptrdiff_t>(len)),
            arrival);
  }
}

void DelaySwitch::State::Forward(std::size_t in, const Frame& frame, std::int64_t arrival_ns) {
  const std::uint8_t* eth = frame->data() + kVnetHdrLen;
  const std::uint8_t* dst = eth;
  const std::uint8_t* src = eth + ETH_ALEN;
  if (!IsGroupAddress(src)) {
    const std::uint64_t key = MacKey(src);
    if (macs.size() >= kMaxMacs && macs.find(key) == macs.end()) macs.clear();
    macs[key] = in;
  }
  const std::int64_t release = arrival_ns + std::chrono::nanoseconds(options.delay).count();
  if (!IsGroupAddress(dst)) {
    if (const auto it = macs.find(MacKey(dst)); it != macs.end()) {
      if (it->second == in) {
        ++stats.filtered;
      } else {
        Enqueue(it->second, frame, release);
      }
      return;
    }
  }
  for (std::size_t out = 0; out < ports.size(); ++out) {
    if (out != in) Enqueue(out, frame, release);
  }
}

void DelaySwitch::State::Enqueue(std::size_t out, const Frame& frame, std::int64_t release_ns) {
  Port& port = ports[out];
  const std::size_t size = frame->size();
  if (port.queued_bytes + size > options.max_queue_bytes) {
    ++stats.dropped_queue_full;
    return;
  }
  port.queue.push_back(Queued{release_ns, frame});
  port.queued_bytes += size;
}

Status DelaySwitch::State::ReleaseDue(std::int64_t now_ns) {
  for (std::size_t i = 0; i < ports.size(); ++i) {
    Port& port = ports[i];
    while (!port.blocked && !port.queue.empty() && port.queue.front().release_ns <= now_ns) {
      const std::vector<std::uint8_t>& bytes = *port.queue.front().frame;
      sockaddr_ll to{};
      to.sll_family = AF_PACKET;
      to.sll_ifindex = port.ifindex;
      // The frame's EtherType (network order), so the kernel knows the protocol before it
      // reads the virtio_net_hdr; 802.3 length fields get ETH_P_ALL (it parses the header).
      std::uint16_t type = 0;
      std::memcpy(&type, bytes.data() + kVnetHdrLen + kEtherTypeAt, sizeof(type));
      to.sll_protocol = ntohs(type) >= ETH_P_802_3_MIN ? type : htons(ETH_P_ALL);
      const ssize_t sent = sendto(port.fd.get(), bytes.data(), bytes.size(), 0,
                                  reinterpret_cast<const sockaddr*>(&to), sizeof(to));
      if (sent < 0 && errno == EINTR) continue;
      if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        port.blocked = true;  // the frame stays at the front until the socket drains
        MPCACHE_RETURN_IF_ERROR(Watch(i, true));
        break;
      }
      if (sent < 0) {
        ++stats.dropped_send;
      } else {
        ++stats.forwarded;
        stats.forwarded_bytes += bytes.size() - kVnetHdrLen;
      }
      port.queued_bytes -= bytes.size();
      port.queue.pop_front();
    }
  }
  return Status::Ok();
}

Status DelaySwitch::State::ArmTimer() {
  std::int64_t next = kNever;
  for (const Port& port : ports) {
    if (!port.blocked && !port.queue.empty()) next = std::min(next, port.queue.front().release_ns);
  }
  if (next == timer_at) return Status::Ok();
  itimerspec spec{};  // all zero: disarm
  if (next != kNever) {
    spec.it_value.tv_sec = static_cast<time_t>(next / kNsPerSecond);
    spec.it_value.tv_nsec = static_cast<long>(next % kNsPerSecond);
  }
  if (timerfd_settime(timer.get(), TFD_TIMER_ABSTIME, &spec, nullptr) != 0) {
    return IoError(Errno("timerfd_settime"));
  }
  timer_at = next;
  return Status::Ok();
}

DelaySwitch::DelaySwitch(std::unique_ptr<State> state) : state_(std::move(state)) {}
DelaySwitch::~DelaySwitch() = default;

Result<std::unique_ptr<DelaySwitch>> DelaySwitch::Open(const SwitchOptions& options) {
  MPCACHE_RETURN_IF_ERROR(ValidateOptions(options));
  auto state = std::make_unique<State>();
  state->options = options;
  state->buffer.resize(kVnetHdrLen + kMaxFrame);
  for (const std::string& name : options.ports) {  // every name first: the clearer error
    const unsigned ifindex = if_nametoindex(name.c_str());
    if (ifindex == 0) {
      return InvalidArgument(
          "--port " + name +
          ": no such network interface in this namespace (`ip link` lists them)");
    }
    Port port;
    port.name = name;
    port.ifindex = static_cast<int>(ifindex);
    state->ports.push_back(std::move(port));
  }
  for (Port& port : state->ports) {
    MPCACHE_ASSIGN_OR_RETURN(port.fd, OpenPort(port.name, port.ifindex));
  }
  state->epoll = Fd(epoll_create1(EPOLL_CLOEXEC));
  if (state->epoll.get() < 0) return IoError(Errno("epoll_create1"));
  state->timer = Fd(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
  if (state->timer.get() < 0) return IoError(Errno("timerfd_create"));
  MPCACHE_RETURN_IF_ERROR(
      EpollControl(state->epoll.get(), EPOLL_CTL_ADD, state->timer.get(), EPOLLIN, kTimerTag));
  for (std::size_t i = 0; i < state->ports.size(); ++i) {
    MPCACHE_RETURN_IF_ERROR(
        EpollControl(state->epoll.get(), EPOLL_CTL_ADD, state->ports[i].fd.get(), EPOLLIN, i));
  }
  return std::unique_ptr<DelaySwitch>(new DelaySwitch(std::move(state)));
}

Result<SwitchStats> DelaySwitch::Run(int stop_fd) {
  State& s = *state_;
  MPCACHE_RETURN_IF_ERROR(EpollControl(s.epoll.get(), EPOLL_CTL_ADD, stop_fd, EPOLLIN, kStopTag));
  std::array<epoll_event, 16> events{};
  for (;;) {
    const int n = epoll_wait(s.epoll.get(), events.data(), static_cast<int>(events.size()), -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return IoError(Errno("epoll_wait"));
    for (int k = 0; k < n; ++k) {
      const epoll_event& ev = events[static_cast<std::size_t>(k)];
      if (ev.data.u64 == kStopTag) {
        (void)epoll_ctl(s.epoll.get(), EPOLL_CTL_DEL, stop_fd, nullptr);
        return s.stats;
      }
      if (ev.data.u64 == kTimerTag) {
        std::uint64_t expirations = 0;
        (void)read(s.timer.get(), &expirations, sizeof(expirations));
        s.timer_at = kNever;  // a fired timer is disarmed
        continue;
      }
      const auto port = static_cast<std::size_t>(ev.data.u64);
      if ((ev.events & EPOLLOUT) != 0 && s.ports[port].blocked) {
        s.ports[port].blocked = false;
        MPCACHE_RETURN_IF_ERROR(s.Watch(port, false));
      }
      if ((ev.events & (EPOLLIN | EPOLLERR)) != 0) s.Receive(port);
    }
    MPCACHE_RETURN_IF_ERROR(s.ReleaseDue(MonotonicNs()));
    MPCACHE_RETURN_IF_ERROR(s.ArmTimer());
  }
}

std::string FormatStats(const SwitchStats& stats) {
  return "forwarded " + std::to_string(stats.forwarded) + " frames (" +
         std::to_string(stats.forwarded_bytes) + " bytes), dropped " +
         std::to_string(stats.dropped()) + " (queue full " +
         std::to_string(stats.dropped_queue_full) + ", send refused " +
         std::to_string(stats.dropped_send) + ", malformed " +
         std::to_string(stats.dropped_malformed) + "), received " + std::to_string(stats.received) +
         ", filtered " + std::to_string(stats.filtered) + ", receive errors " +
         std::to_string(stats.receive_errors);
}

}  // namespace mpcache::netdelay
