// The parties' view of the network. One Channel per party: it can send bytes to and
// receive bytes from every other party. Implementations: MemMesh (threads in one
// process, tests and benchmarks) and TlsMesh (processes over mutually authenticated TLS).
//
// Rules (as in emp-toolkit): one thread owns a party's Channel; Send never blocks on the
// receiver (full duplex per peer, so two parties sending large messages to each other at
// the same time cannot deadlock); Flush before you wait for a reply; Recv returns exactly
// the bytes asked for or an error (peer gone, timeout, abort) — never a short read.
// Traffic is counted in CommStats under the current phase name.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"
#include "net/comm_stats.h"

namespace mpcache::net {

using PartyId = int;

class Channel {
 public:
  virtual ~Channel() = default;

  virtual PartyId self() const = 0;
  virtual int num_parties() const = 0;

  // Queue bytes for `peer`. Bytes are counted when queued.
  Status Send(PartyId peer, std::span<const std::uint8_t> data) {
    stats_.RecordSend(data.size());
    return DoSend(peer, data);
  }
  // Push queued bytes to the wire.
  virtual Status Flush() = 0;
  // Receive exactly data.size() bytes from `peer`.
  Status Recv(PartyId peer, std::span<std::uint8_t> data) {
    auto s = DoRecv(peer, data);
    if (s.ok()) stats_.RecordRecv(data.size());
    return s;
  }

  // Typed helpers: trivially copyable element spans.
  template <typename T>
  Status SendValues(PartyId peer, std::span<const T> v) {
    return Send(peer, {reinterpret_cast<const std::uint8_t*>(v.data()), v.size_bytes()});
  }
  template <typename T>
  Status RecvValues(PartyId peer, std::span<T> v) {
    return Recv(peer, {reinterpret_cast<std::uint8_t*>(v.data()), v.size_bytes()});
  }

  CommStats& stats() { return stats_; }
  const CommStats& stats() const { return stats_; }

 protected:
  virtual Status DoSend(PartyId peer, std::span<const std::uint8_t> data) = 0;
  virtual Status DoRecv(PartyId peer, std::span<std::uint8_t> data) = 0;

 private:
  CommStats stats_;
};

// One round of a small fixed-size message between all parties (the session's agreements on
// settings): `out` to every peer, then as many bytes from each. The messages by party id
// (this party's entry is `out`).
template <std::size_t N>
Result<std::vector<std::array<std::uint8_t, N>>> ExchangeWithPeers(
    Channel& channel, const std::array<std::uint8_t, N>& out) {
  const int n = channel.num_parties();
  for (PartyId p = 0; p < n; ++p) {
    if (p != channel.self()) MPCACHE_RETURN_IF_ERROR(channel.Send(p, out));
  }
  MPCACHE_RETURN_IF_ERROR(channel.Flush());
  channel.stats().RecordRound();
  std::vector<std::array<std::uint8_t, N>> all(static_cast<std::size_t>(n));
  for (PartyId p = 0; p < n; ++p) {
    auto& in = all[static_cast<std::size_t>(p)];
    if (p == channel.self()) {
      in = out;
    } else {
      MPCACHE_RETURN_IF_ERROR(channel.Recv(p, in));
    }
  }
  return all;
}

}  // namespace mpcache::net
