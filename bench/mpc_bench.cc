// Micro-benchmarks of the SPDZ core: batched Beaver products and truncation over the
// in-memory mesh (three parties, online phase only: preprocessing is made before timing),
// and the dealer's generation rate. The end-to-end figures with offline/online split are
// `mpcache-bench ops` (docs/mpc-core.md).
#include <benchmark/benchmark.h>

#include <barrier>

#include "mpc/beaver.h"
#include "mpc/io.h"
#include "mpc/trunc.h"
#include "preproc/local_parties.h"

namespace {

using namespace mpcache;  // NOLINT: benchmark file

template <typename P, bool kTrunc>
void BM_Online(benchmark::State& state) {
  const std::size_t n = static_cast<std::size_t>(state.range(0));
  auto parties = preproc::LocalParties<P>::Create().value();
  auto* dealer = &parties->dealer();
  std::vector<std::uint64_t> x(n, 12345), y(n, 678);
  std::uint64_t bytes = 0;
  for (auto _ : state) {
    state.PauseTiming();
    const preproc::BatchRequest req =
        kTrunc
            ? preproc::BatchRequest{.type = preproc::ItemType::kTrunc, .count = n, .frac_bits = 16}
            : preproc::BatchRequest{.type = preproc::ItemType::kTriple, .count = n};
    if (!dealer->Provide(req).ok()) state.SkipWithError("dealer failed");
    std::barrier sync(4);
    std::thread timer;
    auto res = parties->RunArith([&](mpc::Context<P>& c) -> Status {
      mpc::Context<P>* ctx = &c;
      std::span<const std::uint64_t> mine;
      if (c.self() == 0) mine = x;
      MPCACHE_ASSIGN_OR_RETURN(auto sx, mpc::Input<P>(*ctx, 0, mine, n));
      MPCACHE_ASSIGN_OR_RETURN(auto sy,
                               mpc::Input<P>(*ctx, 0,
                                             c.self() == 0 ? std::span<const std::uint64_t>(y)
                                                           : std::span<const std::uint64_t>(),
                                             n));
      MPCACHE_RETURN_IF_ERROR(ctx->CheckMacs());
      ctx->stats().Reset();
      if (c.self() == 0) state.ResumeTiming();
      mpc::Shares<P> z;
      if constexpr (kTrunc) {
        MPCACHE_ASSIGN_OR_RETURN(z, mpc::Trunc(*ctx, sx, 16));
      } else {
        MPCACHE_ASSIGN_OR_RETURN(z, mpc::Mul(*ctx, sx, sy));
      }
      MPCACHE_RETURN_IF_ERROR(ctx->CheckMacs());
      if (c.self() == 0) {
        state.PauseTiming();
        bytes = ctx->stats().Total().bytes_sent;
      }
      return Status::Ok();
    });
    for (auto& r : res) {
      if (!r.ok()) state.SkipWithError(r.error().ToString().c_str());
    }
    state.ResumeTiming();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n));
  state.counters["bytes_per_party"] = static_cast<double>(bytes);
}

// Latency of one communication round: 1000 openings of one value, back to back.
template <typename P>
void BM_RoundLatency(benchmark::State& state) {
  auto parties = preproc::LocalParties<P>::Create(preproc::LocalPartiesFromSeed(3)).value();
  constexpr int kRounds = 1000;
  for (auto _ : state) {
    auto res = parties->RunArith([&](mpc::Context<P>& ctx) -> Status {
      mpc::Shares<P> one(1);
      for (int i = 0; i < kRounds; ++i) {
        MPCACHE_ASSIGN_OR_RETURN(auto v, ctx.Open(one));
        benchmark::DoNotOptimize(v);
      }
      return ctx.CheckMacs();
    });
    for (auto& r : res) {
      if (!r.ok()) state.SkipWithError(r.error().ToString().c_str());
    }
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * kRounds);
}

void BM_DealerTriples(benchmark::State& state) {
  const std::size_t n = static_cast<std::size_t>(state.range(0));
  auto dealer = preproc::Dealer::Create(
                    state.range(1) ? preproc::Security::kMalicious : preproc::Security::kSemiHonest,
                    TestSeed(2))
                    .value();
  for (auto _ : state) {
    auto out = dealer->Make({.type = preproc::ItemType::kTriple, .count = n});
    benchmark::DoNotOptimize(out);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n));
}

BENCHMARK(BM_Online<mpc::SemiHonest, false>)
    ->Arg(1 << 16)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_Online<mpc::Spdz2k, false>)
    ->Arg(1 << 16)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_Online<mpc::SemiHonest, true>)
    ->Arg(1 << 16)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_Online<mpc::Spdz2k, true>)->Arg(1 << 16)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_RoundLatency<mpc::SemiHonest>)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_RoundLatency<mpc::Spdz2k>)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_DealerTriples)->Args({1 << 16, 0})->Args({1 << 16, 1})->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
