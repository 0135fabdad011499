// Micro-benchmarks of the secure comparison (LessThanZero: 5 rounds, 25 AND gates + 3 opened
// bits per value) over the in-memory mesh, online only (the dealers' material is made
// before timing), and the bit dealer's generation rate. End-to-end figures with the
// offline/online split are `mpcache-bench ops --op lt|...` (docs/comparison.md).
#include <benchmark/benchmark.h>

#include "mpc/compare/compare.h"
#include "mpc/io.h"
#include "preproc/local_parties.h"

namespace {

using namespace mpcache;  // NOLINT: benchmark file

template <typename P>
void BM_LessThanZero(benchmark::State& state) {
  const std::size_t n = static_cast<std::size_t>(state.range(0));  // a multiple of 64
  auto parties = preproc::LocalParties<P>::Create().value();
  auto* dealer = &parties->dealer();
  auto* bits = &parties->bit_dealer();
  std::vector<std::uint64_t> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = (i % 3 == 0) ? 0 - i : i;
  std::uint64_t bytes = 0;
  for (auto _ : state) {
    state.PauseTiming();
    bool ok = bits->Provide(preproc::BitItem::kEdaBit, n).ok() &&
              bits->Provide(preproc::BitItem::kRootTuple, n).ok() &&
              bits->Provide(preproc::BitItem::kBitTriple, 25 * n).ok() &&
              bits->Provide(preproc::BitItem::kBitRandom, 64).ok() &&
              dealer->Provide({.type = preproc::ItemType::kRandom, .count = 1}).ok();
    if (!ok) state.SkipWithError("dealer failed");
    auto res = parties->Run([&](mpc::BinaryContext<P>& b) -> Status {
      mpc::BinaryContext<P>* bctx = &b;
      mpc::Context<P>* ctx = &b.arith();
      const int self = ctx->self();
      MPCACHE_ASSIGN_OR_RETURN(auto sx, mpc::Input<P>(*ctx, 0,
                                                      self == 0 ? std::span<const std::uint64_t>(x)
                                                                : std::span<const std::uint64_t>(),
                                                      n));
      MPCACHE_RETURN_IF_ERROR(ctx->CheckMacs());
      ctx->stats().Reset();
      if (self == 0) state.ResumeTiming();
      MPCACHE_ASSIGN_OR_RETURN(auto lt, mpc::LessThanZero(*bctx, sx));
      benchmark::DoNotOptimize(lt);
      MPCACHE_RETURN_IF_ERROR(mpc::CheckAllMacs(*bctx));
      if (self == 0) {
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

template <typename P>
void BM_BitDealerEdaBits(benchmark::State& state) {
  const std::size_t n = static_cast<std::size_t>(state.range(0));
  auto bits = preproc::InProcessBitDealer<P>::Create(TestSeed(3), 77).value();
  for (auto _ : state) {
    if (!bits->Provide(preproc::BitItem::kEdaBit, n).ok()) state.SkipWithError("dealer failed");
    for (int p = 0; p < 3; ++p) benchmark::DoNotOptimize(bits->store(p).GetEdaBits(n));
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n));
}

BENCHMARK(BM_LessThanZero<mpc::SemiHonest>)
    ->Arg(1 << 14)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_LessThanZero<mpc::Spdz2k>)->Arg(1 << 14)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_BitDealerEdaBits<mpc::SemiHonest>)->Arg(1 << 14)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_BitDealerEdaBits<mpc::Spdz2k>)->Arg(1 << 14)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
