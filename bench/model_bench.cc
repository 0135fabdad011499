// Plaintext decoding speed of the float reference engine on stories260K (real weights),
// plus the matmul kernel at a Llama-2-7B row width. Model folder: $MPCACHE_MODEL_DIR, else
// the compile-time default (../shared/models next to the source tree).
//   ./bench/bench_model --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "model/checkpoint.h"
#include "model/float_engine.h"
#include "model/float_ops.h"
#include "model/generate.h"
#include "model/tokenizer.h"

namespace {

using namespace mpcache::model;

std::string ModelDir() {
  const char* env = std::getenv("MPCACHE_MODEL_DIR");
  return env != nullptr && *env != '\0' ? env : MPCACHE_DEFAULT_MODEL_DIR;
}

// Loaded once per process (benchmark fixtures run many times).
const ModelWeights* Stories260K(std::string* error) {
  static const auto loaded = [] { return LoadCheckpoint(ModelDir() + "/stories260K.bin"); }();
  if (!loaded.ok()) {
    *error = loaded.error().ToString();
    return nullptr;
  }
  return &loaded.value();
}

// Forward passes at positions 0..steps-1 (a full greedy decode without sampling/printing).
void BM_DecodeStories260K(benchmark::State& state) {
  std::string error;
  const ModelWeights* w = Stories260K(&error);
  if (w == nullptr) {
    state.SkipWithError(error.c_str());
    return;
  }
  const int steps = static_cast<int>(state.range(0));
  auto engine = FloatEngine::Create(*w);
  if (!engine.ok()) {
    state.SkipWithError(engine.error().ToString().c_str());
    return;
  }
  for (auto _ : state) {
    int token = 1;
    for (int pos = 0; pos < steps; ++pos) {
      auto logits = engine->Forward(token, pos);
      token = Sampler::Argmax(*logits);
      benchmark::DoNotOptimize(token);
    }
  }
  state.SetItemsProcessed(state.iterations() * steps);
  state.counters["tok/s"] =
      benchmark::Counter(static_cast<double>(steps), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_DecodeStories260K)->Arg(64)->Arg(256)->Arg(512)->Unit(benchmark::kMillisecond);

// The full generation loop as `mpcache-model run` does it (tokenizer, sampler, pieces).
void BM_GenerateStories260K(benchmark::State& state) {
  std::string error;
  const ModelWeights* w = Stories260K(&error);
  if (w == nullptr) {
    state.SkipWithError(error.c_str());
    return;
  }
  auto tok = Tokenizer::LoadLlama2c(ModelDir() + "/tok512.bin", w->config.vocab_size);
  auto engine = FloatEngine::Create(*w);
  auto sampler = Sampler::Create(w->config.vocab_size, SamplerOptions{});
  if (!tok.ok() || !engine.ok() || !sampler.ok()) {
    state.SkipWithError("cannot set up tokenizer/engine/sampler");
    return;
  }
  GenerateOptions opts;
  opts.steps = 200;
  std::int64_t positions = 0;
  for (auto _ : state) {
    auto r = Generate(*engine, *tok, *sampler, opts);
    if (!r.ok()) {
      state.SkipWithError(r.error().ToString().c_str());
      return;
    }
    positions += r->positions;
    benchmark::DoNotOptimize(r->text.data());
  }
  state.counters["tok/s"] =
      benchmark::Counter(static_cast<double>(positions), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_GenerateStories260K)->Unit(benchmark::kMillisecond);

// out = W x for a (rows x cols) float matrix; reports GFLOP/s.
void BM_MatMul(benchmark::State& state) {
  const std::size_t rows = static_cast<std::size_t>(state.range(0));
  const std::size_t cols = static_cast<std::size_t>(state.range(1));
  std::vector<float> w(rows * cols), x(cols), out(rows);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 17) * 0.01f - 0.08f;
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7) * 0.1f;
  for (auto _ : state) {
    MatMul(out.data(), x.data(), w.data(), cols, rows);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(rows * cols) * 1e-9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_MatMul)->Args({512, 64})->Args({4096, 4096})->Unit(benchmark::kMicrosecond);

// The straightforward C loop of llama2.c's matmul (one sequential sum per row), for
// comparison: without -ffast-math the compiler cannot vectorise its reduction.
void BM_MatMulNaiveC(benchmark::State& state) {
  const std::size_t rows = static_cast<std::size_t>(state.range(0));
  const std::size_t cols = static_cast<std::size_t>(state.range(1));
  std::vector<float> w(rows * cols), x(cols), out(rows);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 17) * 0.01f - 0.08f;
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7) * 0.1f;
  for (auto _ : state) {
    for (std::size_t i = 0; i < rows; ++i) {
      float val = 0.0f;
      for (std::size_t j = 0; j < cols; ++j) val += w[i * cols + j] * x[j];
      out[i] = val;
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(rows * cols) * 1e-9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_MatMulNaiveC)->Args({512, 64})->Args({4096, 4096})->Unit(benchmark::kMicrosecond);

}  // namespace
BENCHMARK_MAIN();
