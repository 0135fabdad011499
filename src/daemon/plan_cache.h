// The dealer requests a party made for a request shape (prompt length, steps), kept from
// the last successful request of that shape: the next one sends them with its Join and
// the dealer streams the answers ahead of need (daemon/dealer_protocol.h). The requests
// depend only on the shape (never on the prompt's content), so replaying them is exact; a
// divergence fails the request and drops the plan. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

namespace mpcache::daemon {

class PlanCache {
 public:
  using Plan = std::vector<std::vector<std::uint8_t>>;
  using Key = std::pair<std::uint32_t, std::uint32_t>;  // prompt length, steps

  Plan Get(Key key) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = plans_.find(key);
    return it == plans_.end() ? Plan{} : it->second;
  }
  void Put(Key key, Plan plan) {
    std::lock_guard<std::mutex> lock(mu_);
    if (plans_.size() >= kMaxShapes && !plans_.contains(key)) plans_.erase(plans_.begin());
    plans_[key] = std::move(plan);
  }
  void Drop(Key key) {
    std::lock_guard<std::mutex> lock(mu_);
    plans_.erase(key);
  }

 private:
  static constexpr std::size_t kMaxShapes = 16;
  mutable std::mutex mu_;
  std::map<Key, Plan> plans_;
};

}  // namespace mpcache::daemon
