// Test harness: three parties over a MemMesh with the in-process dealers
// (preproc/local_parties.h).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "common/prg.h"
#include "mpc/context.h"
#include "mpc/io.h"
#include "preproc/local_parties.h"

namespace mpcache::mpc::testing {

template <typename P>
struct Harness {
  std::unique_ptr<preproc::LocalParties<P>> parties;
  net::MemMesh* mesh = nullptr;                    // parties->mesh()
  preproc::InProcessDealer<P>* dealer = nullptr;   // parties->dealer()
  preproc::InProcessBitDealer<P>* bits = nullptr;  // parties->bit_dealer()

  explicit Harness(std::uint64_t seed = 1, bool on_demand = true) {
    preproc::LocalPartiesOptions o;
    o.dealer_seed = TestSeed(seed);
    o.bit_seed = TestSeed(seed + 7777);
    o.local_seed = TestSeed(seed + 1000);
    o.recv_timeout = std::chrono::seconds(20);
    o.on_demand = on_demand;
    parties = preproc::LocalParties<P>::Create(o).value();
    mesh = &parties->mesh();
    dealer = &parties->dealer();
    bits = &parties->bit_dealer();
  }

  // Run f(Context<P>&) -> Status or Result<T> at every party. `prep` may replace a party's
  // preprocessing (tamper tests) and `channel` its channel.
  template <typename F>
  auto Run(F f, std::vector<Preprocessing<P>*> prep = {}, std::vector<net::Channel*> channel = {}) {
    return parties->RunArith(f, {std::move(prep), {}, std::move(channel)});
  }
};

// n uniform ring values from a test seed.
inline std::vector<std::uint64_t> RandomValues(std::size_t n, std::uint64_t seed) {
  Prg prg(TestSeed(seed));
  std::vector<std::uint64_t> v(n);
  for (auto& e : v) e = prg.NextU64();
  return v;
}

// x entered by party 0 (its clear values; the others pass nothing): shares of x at every
// party, 1 round.
template <typename P>
Result<Shares<P>> Share(Context<P>& ctx, const std::vector<std::uint64_t>& x) {
  return Input<P>(
      ctx, 0,
      ctx.self() == 0 ? std::span<const std::uint64_t>(x) : std::span<const std::uint64_t>(),
      x.size());
}

// Every party's result is ok; else a failure for each party that failed, and false (for
// helpers that return a value: `if (!AllOk(res)) return {};`).
template <typename R>
bool AllOk(const std::vector<R>& results) {
  bool ok = true;
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (results[i].ok()) continue;
    ADD_FAILURE() << "party " << i << ": " << results[i].error().ToString();
    ok = false;
  }
  return ok;
}

// A fatal failure unless every party's result is ok. A caller that reads the results
// after it wraps the call in ASSERT_NO_FATAL_FAILURE (the failure returns from here only).
template <typename R>
void ExpectAllOk(const std::vector<R>& results) {
  if (!AllOk(results)) FAIL() << "a party failed (above)";
}

}  // namespace mpcache::mpc::testing
