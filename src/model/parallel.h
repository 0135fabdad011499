// A small fixed pool of worker threads for data-parallel loops in the float engine
// (matmul rows). Results do not depend on the thread count: each index range is computed by
// exactly the same code whichever thread runs it.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace mpcache::model {

class ParallelFor {
 public:
  // `threads` >= 1 workers in total, the calling thread included.
  explicit ParallelFor(int threads);
  ~ParallelFor();
  ParallelFor(const ParallelFor&) = delete;
  ParallelFor& operator=(const ParallelFor&) = delete;

  int threads() const { return static_cast<int>(parts_); }
  // Calls fn(begin, end) on contiguous chunks covering [0, n); returns when all are done.
  void Run(std::size_t n, const std::function<void(std::size_t, std::size_t)>& fn);

 private:
  void WorkerLoop(std::size_t index);
  std::size_t parts_ = 1;  // set before any worker starts, read-only afterwards
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  const std::function<void(std::size_t, std::size_t)>* job_ = nullptr;
  std::size_t job_n_ = 0;
  std::uint64_t generation_ = 0;
  std::size_t pending_ = 0;
  bool stop_ = false;
};

}  // namespace mpcache::model
