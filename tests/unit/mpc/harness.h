// Test harness: three parties over a MemMesh with an in-process dealer.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "mpc/context.h"
#include "mpc/io.h"
#include "net/mem_mesh.h"
#include "net/run_parties.h"
#include "preproc/in_process_dealer.h"

namespace mpcache::mpc::testing {

template <typename P>
struct Harness {
  std::unique_ptr<net::MemMesh> mesh;
  std::unique_ptr<preproc::InProcessDealer<P>> dealer;

  explicit Harness(std::uint64_t seed = 1, bool on_demand = true) {
    mesh = net::MemMesh::Create(3, {.recv_timeout = std::chrono::seconds(20)}).value();
    dealer = preproc::InProcessDealer<P>::Create(TestSeed(seed), 3, on_demand).value();
  }

  // Run f(Context<P>&) -> Status or Result<T> at every party. `prep` may replace a party's
  // preprocessing (tamper tests) and `channel` its channel.
  template <typename F>
  auto Run(F f, std::vector<Preprocessing<P>*> prep = {}, std::vector<net::Channel*> channel = {}) {
    return net::RunParties(
        *mesh, [&](net::Channel& ch) -> decltype(f(std::declval<Context<P>&>())) {
          const auto i = static_cast<std::size_t>(ch.self());
          net::Channel& c = (i < channel.size() && channel[i]) ? *channel[i] : ch;
          Preprocessing<P>& pr = (i < prep.size() && prep[i]) ? *prep[i] : dealer->store(ch.self());
          auto ctx = Context<P>::Create(c, pr, TestSeed(1000 + i));
          if (!ctx.ok()) return ctx.error();
          return f(**ctx);
        });
  }
};

// x entered by party 0 (its clear values; the others pass nothing): shares of x at every
// party, 1 round.
template <typename P>
Result<Shares<P>> Share(Context<P>& ctx, const std::vector<std::uint64_t>& x) {
  return Input<P>(
      ctx, 0,
      ctx.self() == 0 ? std::span<const std::uint64_t>(x) : std::span<const std::uint64_t>(),
      x.size());
}

template <typename R>
void ExpectAllOk(const std::vector<R>& results) {
  for (std::size_t i = 0; i < results.size(); ++i) {
    ASSERT_TRUE(results[i].ok()) << "party " << i << ": " << results[i].error().ToString();
  }
}

}  // namespace mpcache::mpc::testing
