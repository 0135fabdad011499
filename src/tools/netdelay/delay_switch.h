// A userspace Ethernet switch with a fixed one-way delay, for deploy/netns/netns.sh on a
// kernel without sch_netem: the switch namespace's veth ends join it instead of a bridge.
//
// One AF_PACKET socket per port (SOCK_RAW, bound to the port's ifindex, promiscuous,
// PACKET_IGNORE_OUTGOING, PACKET_VNET_HDR: a GSO super-frame or a frame whose checksum the
// sender left to offload is read with its virtio_net_hdr and written out with the same
// header, so it leaves as it came). Source MACs are learnt; a frame to a known MAC goes to
// that port, any other is flooded, and none goes back out of the port it came in on. Each
// copy waits in its output port's FIFO until arrival + delay (CLOCK_MONOTONIC, a timerfd
// under epoll: no busy loop); a port's queue holds at most max_queue_bytes, what does not
// fit is dropped and counted.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"

namespace mpcache::netdelay {

inline constexpr std::size_t kDefaultMaxQueueBytes = std::size_t{16} << 20;  // per port
inline constexpr std::size_t kMinQueueBytes = std::size_t{256} << 10;        // > a GSO frame
inline constexpr std::size_t kMaxQueueBytes = std::size_t{1} << 30;
inline constexpr std::chrono::microseconds kMaxDelay{std::chrono::seconds(60)};

struct SwitchOptions {
  std::vector<std::string> ports;  // interface names in this network namespace, >= 2
  std::chrono::microseconds delay{0};
  std::size_t max_queue_bytes = kDefaultMaxQueueBytes;
};

// What Run saw. A flooded frame is one `received` and one `forwarded` per port it left by.
struct SwitchStats {
  std::uint64_t received = 0;
  std::uint64_t forwarded = 0;
  std::uint64_t forwarded_bytes = 0;  // Ethernet bytes (GSO super-frames count whole)
  std::uint64_t filtered = 0;         // to a MAC learnt on the port it came in on: not sent
  std::uint64_t dropped_queue_full = 0;
  std::uint64_t dropped_send = 0;       // the kernel refused it (link down, qdisc full)
  std::uint64_t dropped_malformed = 0;  // shorter than an Ethernet header, or truncated
  std::uint64_t receive_errors = 0;     // a port's socket reported an error

  std::uint64_t dropped() const { return dropped_queue_full + dropped_send + dropped_malformed; }
};

// Checks the options without touching the system: at least two ports, no port twice, names
// the kernel could accept, 0 <= delay <= kMaxDelay, kMinQueueBytes <= max_queue_bytes <=
// kMaxQueueBytes. The message names the flag (--port, --delay-us, --max-queue-bytes).
Status ValidateOptions(const SwitchOptions& options);

class DelaySwitch {
 public:
  // Validates the options, then opens and binds every port's socket (root or
  // CAP_NET_RAW). kInvalidArgument for bad options or an interface that does not exist in
  // this namespace, kIo when the kernel refuses a socket option.
  static Result<std::unique_ptr<DelaySwitch>> Open(const SwitchOptions& options);
  ~DelaySwitch();
  DelaySwitch(const DelaySwitch&) = delete;
  DelaySwitch& operator=(const DelaySwitch&) = delete;

  // Forwards until stop_fd becomes readable (e.g. a signalfd for SIGTERM and SIGINT), then
  // returns the counts; frames still queued are discarded. kIo if epoll itself fails.
  Result<SwitchStats> Run(int stop_fd);

 private:
  struct State;
  explicit DelaySwitch(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// "forwarded N frames (B bytes), dropped D (queue full Q, send refused S, malformed M), ..."
std::string FormatStats(const SwitchStats& stats);

}  // namespace mpcache::netdelay
