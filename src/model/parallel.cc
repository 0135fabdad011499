#include "model/parallel.h"

#include <utility>

namespace mpcache::model {

namespace {
// Chunk `index` of `parts` equal chunks of [0, n).
std::pair<std::size_t, std::size_t> Chunk(std::size_t n, std::size_t parts, std::size_t index) {
  return {n * index / parts, n * (index + 1) / parts};
}
}  // namespace

ParallelFor::ParallelFor(int threads) {
  const std::size_t extra = threads > 1 ? static_cast<std::size_t>(threads - 1) : 0;
  parts_ = extra + 1;
  workers_.reserve(extra);
  for (std::size_t i = 0; i < extra; ++i) workers_.emplace_back([this, i] { WorkerLoop(i + 1); });
}

ParallelFor::~ParallelFor() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ParallelFor::Run(std::size_t n, const std::function<void(std::size_t, std::size_t)>& fn) {
  const std::size_t parts = parts_;
  if (parts == 1 || n < parts) {
    fn(0, n);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = &fn;
    job_n_ = n;
    pending_ = workers_.size();
    ++generation_;
  }
  start_cv_.notify_all();
  const auto [b, e] = Chunk(n, parts, 0);
  fn(b, e);
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [this] { return pending_ == 0; });
  job_ = nullptr;
}

void ParallelFor::WorkerLoop(std::size_t index) {
  std::uint64_t seen = 0;
  const std::size_t parts = parts_;
  while (true) {
    const std::function<void(std::size_t, std::size_t)>* job;
    std::size_t n;
    {
      std::unique_lock<std::mutex> lock(mu_);
      start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
      n = job_n_;
    }
    const auto [b, e] = Chunk(n, parts, index);
    (*job)(b, e);
    {
      std::lock_guard<std::mutex> lock(mu_);
      --pending_;
    }
    done_cv_.notify_one();
  }
}

}  // namespace mpcache::model
