// MemMesh: n parties as threads of one process, connected by in-memory byte queues.
// Used by tests, benchmarks and the in-process engine; the protocol code is exactly the
// one that runs over TlsMesh.
//
// One unbounded queue per ordered pair (i -> j), guarded by a mutex and a condition
// variable: Send never blocks (so two parties sending large messages to each other at the
// same time cannot deadlock); Recv blocks until enough bytes arrived, the configured
// timeout elapsed (kTimeout) or the mesh was aborted (kAborted — wakes every waiter, and
// every Recv after the abort fails, even with the bytes already queued: the one rule TlsMesh
// keeps too, so that no party computes on after a peer gave up).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "net/channel.h"

namespace mpcache::net {

struct MemMeshOptions {
  // How long Recv waits for a peer before giving up with kTimeout.
  std::chrono::milliseconds recv_timeout{std::chrono::seconds(60)};
};

class MemMesh {
 public:
  static Result<std::unique_ptr<MemMesh>> Create(int num_parties, MemMeshOptions options = {});
  ~MemMesh();
  MemMesh(const MemMesh&) = delete;
  MemMesh& operator=(const MemMesh&) = delete;

  int num_parties() const { return static_cast<int>(channels_.size()); }
  // Party i's channel; owned by the mesh, used by one thread at a time.
  Channel& party(PartyId i) { return *channels_[static_cast<std::size_t>(i)]; }

  // Wake every waiting Recv with kAborted; every later Recv fails with kAborted too, bytes
  // queued or not. Sends still queue (harmless: nobody receives them).
  void Abort();
  bool aborted() const;

 private:
  friend class MemChannel;
  struct Queue {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<std::vector<std::uint8_t>> chunks;
    std::size_t head_offset = 0;  // bytes of chunks.front() already consumed
    // One consumed chunk kept for the next message on this link: protocols repeat message
    // sizes round after round, so steady state allocates (and page-faults) nothing.
    std::vector<std::uint8_t> spare;
  };
  MemMesh(int n, MemMeshOptions options);
  Status Push(PartyId from, PartyId to, std::span<const std::uint8_t> data);
  Status Pop(PartyId from, PartyId to, std::span<std::uint8_t> out);
  Queue& queue(PartyId from, PartyId to) {
    return queues_[static_cast<std::size_t>(from) * static_cast<std::size_t>(num_parties()) +
                   static_cast<std::size_t>(to)];
  }

  MemMeshOptions options_;
  std::atomic<bool> aborted_{false};
  std::vector<Queue> queues_;
  std::vector<std::unique_ptr<Channel>> channels_;
};

}  // namespace mpcache::net
