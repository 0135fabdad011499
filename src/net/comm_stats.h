// Communication accounting per named phase: bytes sent and received, messages, rounds
// and wall time. Rounds are counted by the protocol layer (one per communication round:
// a batch of messages sent before anything is awaited), not by the channel.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>

namespace mpcache::net {

struct PhaseCounters {
  std::uint64_t bytes_sent = 0;
  std::uint64_t bytes_received = 0;
  std::uint64_t messages_sent = 0;
  std::uint64_t rounds = 0;
  double seconds = 0.0;

  PhaseCounters& operator+=(const PhaseCounters& o) {
    bytes_sent += o.bytes_sent;
    bytes_received += o.bytes_received;
    messages_sent += o.messages_sent;
    rounds += o.rounds;
    seconds += o.seconds;
    return *this;
  }
};

class CommStats {
 public:
  void RecordSend(std::uint64_t bytes) {
    auto& c = phases_[phase_];
    c.bytes_sent += bytes;
    c.messages_sent += 1;
  }
  void RecordRecv(std::uint64_t bytes) { phases_[phase_].bytes_received += bytes; }
  void RecordRound() { phases_[phase_].rounds += 1; }
  void RecordSeconds(const std::string& phase, double s) { phases_[phase].seconds += s; }

  const std::string& phase() const { return phase_; }
  void set_phase(std::string phase) { phase_ = std::move(phase); }
  // Wall time of the scopes nested in the innermost open PhaseScope (so a phase's seconds
  // are its own, exclusive of the phases opened inside it).
  double* inner_seconds() { return inner_seconds_; }
  void set_inner_seconds(double* s) { inner_seconds_ = s; }

  PhaseCounters Total() const {
    PhaseCounters t;
    for (const auto& [name, c] : phases_) t += c;
    return t;
  }
  const std::map<std::string, PhaseCounters>& phases() const { return phases_; }
  void Reset() { phases_.clear(); }

 private:
  std::string phase_ = "default";
  std::map<std::string, PhaseCounters> phases_;
  double* inner_seconds_ = nullptr;
};

// RAII: count everything in this scope under `name`, and the scope's wall time.
class PhaseScope {
 public:
  PhaseScope(CommStats& stats, std::string name)
      : stats_(stats),
        previous_(stats.phase()),
        name_(std::move(name)),
        outer_seconds_(stats.inner_seconds()),
        start_(std::chrono::steady_clock::now()) {
    stats_.set_phase(name_);
    stats_.set_inner_seconds(&inner_);
  }
  // Records the scope's own time (nested scopes record theirs) and hands the whole to the
  // enclosing scope, so no second is counted twice.
  ~PhaseScope() {
    const std::chrono::duration<double> d = std::chrono::steady_clock::now() - start_;
    stats_.RecordSeconds(name_, d.count() - inner_);
    if (outer_seconds_ != nullptr) *outer_seconds_ += d.count();
    stats_.set_inner_seconds(outer_seconds_);
    stats_.set_phase(previous_);
  }
  PhaseScope(const PhaseScope&) = delete;
  PhaseScope& operator=(const PhaseScope&) = delete;

 private:
  CommStats& stats_;
  std::string previous_;
  std::string name_;
  double* outer_seconds_;
  double inner_ = 0;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace mpcache::net
