// Micro-benchmarks of the compact-weight products (model/compact_kernels.h) against this
// machine's memory bandwidth: a plain streaming read (the ceiling), then the Q8_0 products a
// party runs per token — semi-honest shares (one 64-bit word per value), malicious value and
// MAC shares (two 128-bit words, one pass) and the one-hot embedding lookup. Matrices are
// larger than the last-level cache, so the weights stream from memory as in a 7B forward.
// Counters: bytes_per_second = weight bytes streamed. The end-to-end command with --json is
// `mpcache-bench weights` (docs/secure-llama.md "7B on one machine").
#include <benchmark/benchmark.h>

#include <cstring>
#include <numeric>
#include <thread>
#include <vector>

#include "model/compact_kernels.h"

namespace {

using namespace mpcache;  // NOLINT: benchmark file
using model::u128;

// A Q8_0 matrix of random int8 weights and scales around 2^-8 (a trained 7B's range).
struct Q8Matrix {
  std::vector<std::uint8_t> bytes;
  model::CompactMatrix m;
  Q8Matrix(std::size_t rows, std::size_t cols) {
    m.type = model::CompactType::kQ8_0;
    m.rows = rows;
    m.cols = cols;
    bytes.resize(m.bytes());
    std::uint64_t s = 88172645463325252ull;
    for (std::size_t i = 0; i < bytes.size(); ++i) {
      s ^= s << 13;
      s ^= s >> 7;
      s ^= s << 17;
      bytes[i] = static_cast<std::uint8_t>(s);
    }
    for (std::size_t b = 0; b < m.bytes() / 34; ++b) {
      const std::uint16_t h = 0x1C00 | static_cast<std::uint16_t>(b & 0x3FF);  // ~2^-8
      std::memcpy(bytes.data() + b * 34, &h, 2);
    }
    m.data = bytes.data();
    m.max_scaled = model::ScaledHalf(0x1FFF);
  }
};

// Sums a 256 MiB buffer (4 independent 64-bit sums, vectorised) on `threads` threads.
void BM_StreamRead(benchmark::State& state) {
  const std::size_t n = std::size_t{1} << 28;
  const int threads = static_cast<int>(state.range(0));
  std::vector<std::uint64_t> buf(n / 8);
  std::iota(buf.begin(), buf.end(), std::uint64_t{1});
  std::vector<std::uint64_t> sums(static_cast<std::size_t>(threads));
  const auto part = [&](int t) {
    const std::size_t b = buf.size() * static_cast<std::size_t>(t) / threads,
                      e = buf.size() * static_cast<std::size_t>(t + 1) / threads;
    const std::uint64_t* p = buf.data();
    benchmark::DoNotOptimize(p);
    std::uint64_t a = 0, c = 0, d = 0, f = 0;
    for (std::size_t i = b; i + 4 <= e; i += 4) {
      a += p[i];
      c += p[i + 1];
      d += p[i + 2];
      f += p[i + 3];
    }
    sums[static_cast<std::size_t>(t)] += a + c + d + f;
  };
  for (auto _ : state) {
    std::vector<std::thread> workers;
    for (int t = 1; t < threads; ++t) workers.emplace_back(part, t);
    part(0);
    for (auto& w : workers) w.join();
    benchmark::ClobberMemory();
  }
  benchmark::DoNotOptimize(sums.data());
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n));
}
BENCHMARK(BM_StreamRead)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

// rows x 4096 (the 7B's wq shape is 4096 x 4096; 11008 x 4096 is w1/w3).
void BM_MatVecSemiHonest(benchmark::State& state) {
  Q8Matrix w(static_cast<std::size_t>(state.range(0)), 4096);
  std::vector<std::uint64_t> x(4096, 0x123456789ull), y(w.m.rows);
  const model::KernelOptions o{static_cast<int>(state.range(1))};
  for (auto _ : state) model::CompactMatVec(w.m, x.data(), y.data(), o);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * w.m.bytes()));
}
BENCHMARK(BM_MatVecSemiHonest)
    ->Args({11008, 1})
    ->Args({11008, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_MatVecMalicious(benchmark::State& state) {
  Q8Matrix w(static_cast<std::size_t>(state.range(0)), 4096);
  std::vector<u128> xa(4096, 0x123456789ull), xb(4096, ~u128{0} / 3), ya(w.m.rows), yb(w.m.rows);
  const model::KernelOptions o{static_cast<int>(state.range(1))};
  for (auto _ : state) model::CompactMatVec2(w.m, xa.data(), xb.data(), ya.data(), yb.data(), o);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * w.m.bytes()));
}
BENCHMARK(BM_MatVecMalicious)
    ->Args({11008, 1})
    ->Args({11008, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_EmbeddingMalicious(benchmark::State& state) {
  Q8Matrix w(32000, 4096);
  std::vector<u128> xa(32000, 0x123456789ull), xb(32000, ~u128{0} / 3), ya(4096), yb(4096);
  const model::KernelOptions o{static_cast<int>(state.range(0))};
  for (auto _ : state) model::CompactVecMat2(w.m, xa.data(), xb.data(), ya.data(), yb.data(), o);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * w.m.bytes()));
}
BENCHMARK(BM_EmbeddingMalicious)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
