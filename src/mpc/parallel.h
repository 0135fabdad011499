// ParallelFor: split [0, n) into `threads` contiguous ranges and run fn(begin, end) on each,
// the first in the calling thread. For big local kernels only (thread start-up ~tens of us).
#pragma once

#include <cstddef>
#include <thread>
#include <vector>

namespace mpcache::mpc {

template <typename F>
void ParallelFor(int threads, std::size_t n, F&& fn) {
  const std::size_t t = threads < 1 ? 1 : static_cast<std::size_t>(threads);
  if (t == 1 || n < 2 * t) {
    fn(std::size_t{0}, n);
    return;
  }
  const std::size_t chunk = (n + t - 1) / t;
  std::vector<std::thread> workers;
  for (std::size_t i = 1; i < t; ++i) {
    const std::size_t b = i * chunk, e = std::min(n, b + chunk);
    if (b < e) workers.emplace_back([&fn, b, e] { fn(b, e); });
  }
  fn(std::size_t{0}, std::min(n, chunk));
  for (auto& w : workers) w.join();
}

}  // namespace mpcache::mpc
