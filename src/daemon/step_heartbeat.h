// A party's heartbeat to its client while the request's positions run (client_protocol.h:
// Progress). A decoding step can take longer than the client's receive timeout without
// anything being wrong — a throttled or far dealer link, a 7B-shaped layer stack — and the
// client's timeout is meant to measure a party's silence (a dead process, a cut link), not
// the length of a step. So while the session works, a Progress{session, position} leaves
// every `interval` from a thread of its own. It says nothing the client does not know (the
// position is public, and the client sees every token's timing anyway).
//
// What still ends a stuck request: the party's receive timeout on its peers and the dealer
// (a peer or dealer that went silent), the party's watchdog (timeouts.request_ms) and the
// client's own deadline for the whole request (timeouts.request_ms). SyncLink::Send is safe
// from any thread: each message is posted whole to the link's io thread.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

namespace mpcache::daemon {

class StepHeartbeat {
 public:
  // The interval for a link whose receive timeout is `recv`: 1 s, or a quarter of the
  // timeout when that is shorter (at least 10 ms).
  static std::chrono::milliseconds IntervalFor(std::chrono::milliseconds recv) {
    return std::clamp(recv / 4, std::chrono::milliseconds(10), std::chrono::milliseconds(1000));
  }

  // Calls `beat(position)` every `interval` until destroyed; the first beat after one
  // interval. `beat` returns false when the link is gone: no more beats then.
  StepHeartbeat(std::chrono::milliseconds interval, std::function<bool(int)> beat)
      : interval_(interval), beat_(std::move(beat)), thread_([this] { Run(); }) {}
  ~StepHeartbeat() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  StepHeartbeat(const StepHeartbeat&) = delete;
  StepHeartbeat& operator=(const StepHeartbeat&) = delete;

  // The position the session is at (the next beat names it).
  void At(int pos) { pos_.store(pos, std::memory_order_relaxed); }
  int beats() const { return beats_.load(std::memory_order_relaxed); }

 private:
  void Run() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!cv_.wait_for(lock, interval_, [this] { return stop_; })) {
      if (!beat_(pos_.load(std::memory_order_relaxed))) return;
      beats_.fetch_add(1, std::memory_order_relaxed);
    }
  }

  std::chrono::milliseconds interval_;
  std::function<bool(int)> beat_;
  std::atomic<int> pos_{0};
  std::atomic<int> beats_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;  // last: starts once the rest is ready
};

}  // namespace mpcache::daemon
