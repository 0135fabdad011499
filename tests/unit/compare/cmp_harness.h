// Test harness for the comparison layer: three parties over a MemMesh with the in-process
// arithmetic dealer and the in-process bit dealer; inputs shared by party 0, outputs
// opened and MAC-checked in both domains.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "mpc/compare/binary_context.h"
#include "mpc/io.h"
#include "unit/mpc/harness.h"

namespace mpcache::mpc::testing {

using Vec = std::vector<std::uint64_t>;

template <typename P>
struct CmpHarness {
  Harness<P> arith;
  preproc::InProcessBitDealer<P>* bits = nullptr;

  explicit CmpHarness(std::uint64_t seed = 1) : arith(seed), bits(arith.bits) {}

  // f(BinaryContext<P>&) at every party; `bprep` may replace a party's bit preprocessing
  // and `channel` its channel (tamper tests).
  template <typename F>
  auto Run(F f, std::vector<BitPreprocessing<P>*> bprep = {},
           std::vector<net::Channel*> channel = {}) {
    return arith.parties->Run(f, {{}, std::move(bprep), std::move(channel)});
  }
};

// Party 0 inputs x.
template <typename P>
Result<Shares<P>> ShareVec(Context<P>& ctx, const Vec& x) {
  return Input<P>(
      ctx, 0,
      ctx.self() == 0 ? std::span<const std::uint64_t>(x) : std::span<const std::uint64_t>(),
      x.size());
}

// Open x and check MACs in both domains.
template <typename P>
Result<Vec> RevealChecked(BinaryContext<P>& ctx, const Shares<P>& x) {
  MPCACHE_ASSIGN_OR_RETURN(Vec v, ctx.arith().Open(x));
  MPCACHE_RETURN_IF_ERROR(CheckAllMacs(ctx));
  return v;
}

}  // namespace mpcache::mpc::testing
