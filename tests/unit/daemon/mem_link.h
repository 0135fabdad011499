// An in-memory MessageLink pair for the dealer-client tests (prefetch_test.cc,
// party_limits_test.cc).
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "daemon/message_link.h"

namespace mpcache::daemon::testing {

// Two ends of an in-memory message link; closing one end makes the other's Recv kIo once
// the queue is drained.
class MemLink final : public MessageLink {
 public:
  struct Pipe {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<std::vector<std::uint8_t>> q;
    bool closed = false;
  };
  MemLink(std::shared_ptr<Pipe> in, std::shared_ptr<Pipe> out)
      : in_(std::move(in)), out_(std::move(out)) {}
  ~MemLink() override {
    std::lock_guard<std::mutex> lock(out_->mu);
    out_->closed = true;
    out_->cv.notify_all();
  }
  Status Send(std::vector<std::uint8_t> payload) override {
    std::lock_guard<std::mutex> lock(out_->mu);
    if (out_->closed) return IoError("link closed");
    out_->q.push_back(std::move(payload));
    out_->cv.notify_all();
    return Status::Ok();
  }
  Result<std::vector<std::uint8_t>> Recv(std::chrono::milliseconds timeout) override {
    std::unique_lock<std::mutex> lock(in_->mu);
    if (!in_->cv.wait_for(lock, timeout, [&] { return !in_->q.empty() || in_->closed; })) {
      return Timeout("peer did not answer");
    }
    if (in_->q.empty()) return IoError("peer closed the link");
    auto m = std::move(in_->q.front());
    in_->q.pop_front();
    return m;
  }

 private:
  std::shared_ptr<Pipe> in_, out_;
};

inline std::pair<std::unique_ptr<MemLink>, std::unique_ptr<MemLink>> MakeLinkPair() {
  auto a = std::make_shared<MemLink::Pipe>(), b = std::make_shared<MemLink::Pipe>();
  return {std::make_unique<MemLink>(a, b), std::make_unique<MemLink>(b, a)};
}

}  // namespace mpcache::daemon::testing
