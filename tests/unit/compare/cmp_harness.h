// Test harness for the comparison layer: three parties over a MemMesh with the in-process
// arithmetic dealer and the in-process bit dealer; inputs shared by party 0, outputs
// opened and MAC-checked in both domains.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "mpc/compare/binary_context.h"
#include "mpc/io.h"
#include "preproc/bit_dealer.h"
#include "unit/mpc/harness.h"

namespace mpcache::mpc::testing {

using Vec = std::vector<std::uint64_t>;

template <typename P>
struct CmpHarness {
  Harness<P> arith;
  std::unique_ptr<preproc::InProcessBitDealer<P>> bits;

  explicit CmpHarness(std::uint64_t seed = 1) : arith(seed) {
    bits = preproc::InProcessBitDealer<P>::Create(TestSeed(seed + 7777),
                                                  arith.dealer->dealer().mac_key())
               .value();
  }

  // f(BinaryContext<P>&) at every party; `bprep` may replace a party's bit preprocessing
  // and `channel` its channel (tamper tests).
  template <typename F>
  auto Run(F f, std::vector<BitPreprocessing<P>*> bprep = {},
           std::vector<net::Channel*> channel = {}) {
    using R = decltype(f(std::declval<BinaryContext<P>&>()));
    return arith.Run(
        [&](Context<P>& ctx) -> R {
          const auto i = static_cast<std::size_t>(ctx.self());
          BitPreprocessing<P>& bp =
              (i < bprep.size() && bprep[i]) ? *bprep[i] : bits->store(ctx.self());
          auto b = BinaryContext<P>::Create(ctx, bp, TestSeed(3000 + i));
          if (!b.ok()) return b.error();
          return f(**b);
        },
        {}, channel);
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
