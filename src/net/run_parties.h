// RunParties: run one function per party of a MemMesh, each in its own thread, and collect
// the results in party order. f(Channel&) returns Status or Result<T>; the first party to
// fail aborts the mesh so the others stop waiting (they return kAborted) instead of
// hanging — except on kMacCheckFailed: a failed MAC check is reached by every party in
// step (each finishes the check's rounds), and aborting then would cut off a peer that
// is still sending its last message. For tests, benchmarks and the in-process engine.
#pragma once

#include <optional>
#include <thread>
#include <type_traits>
#include <vector>

#include "net/mem_mesh.h"

namespace mpcache::net {

template <typename F>
auto RunParties(MemMesh& mesh, F&& f) -> std::vector<std::invoke_result_t<F&, Channel&>> {
  using R = std::invoke_result_t<F&, Channel&>;
  const int n = mesh.num_parties();
  std::vector<std::optional<R>> slots(static_cast<std::size_t>(n));
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      auto& slot = slots[static_cast<std::size_t>(i)];
      slot.emplace(f(mesh.party(i)));
      if (!slot->ok() && slot->error().code() != ErrorCode::kMacCheckFailed) mesh.Abort();
    });
  }
  for (auto& t : threads) t.join();
  std::vector<R> out;
  out.reserve(slots.size());
  for (auto& s : slots) out.push_back(std::move(*s));
  return out;
}

}  // namespace mpcache::net
