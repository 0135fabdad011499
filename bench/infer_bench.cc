// Secure greedy generation (three parties in one process, in-memory mesh, in-process
// dealers) on stories260K: 16 positions from BOS per iteration, public weights, in both
// security modes. Counters: seconds per decoded token, rounds and bytes (party 0) per
// decoded token. The full per-phase breakdown is `mpcache-bench generate --json`.
//   ./bench/bench_infer --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "infer/in_process.h"
#include "infer/ring_model.h"
#include "model/checkpoint.h"

namespace {

using namespace mpcache;

std::string ModelDir() {
  const char* env = std::getenv("MPCACHE_MODEL_DIR");
  return env != nullptr && *env != '\0' ? env : MPCACHE_DEFAULT_MODEL_DIR;
}

std::shared_ptr<const infer::RingModel> Model(std::string* error) {
  static const auto loaded = []() -> Result<std::shared_ptr<const infer::RingModel>> {
    MPCACHE_ASSIGN_OR_RETURN(model::ModelWeights w,
                             model::LoadCheckpoint(ModelDir() + "/stories260K.bin"));
    return infer::EncodeModel(w, kRecommendedFracBits);
  }();
  if (!loaded.ok()) {
    *error = loaded.error().ToString();
    return nullptr;
  }
  return *loaded;
}

template <typename P>
void BM_SecureGenerate(benchmark::State& state) {
  std::string error;
  auto m = Model(&error);
  if (!m) {
    state.SkipWithError(error.c_str());
    return;
  }
  const int steps = 16;
  double decoded = 0, rounds = 0, bytes = 0, seconds = 0;
  for (auto _ : state) {
    infer::InProcessOptions o;
    o.session.max_seq_len = steps;
    auto r = infer::RunInProcess<P>(m, {1}, 1, steps, o);
    if (!r.ok()) {
      state.SkipWithError(r.error().ToString().c_str());
      return;
    }
    decoded += r->report.decode_positions;
    seconds += r->report.decode_seconds;
    for (const auto& [name, c] : r->report.decode_phases) {
      rounds += static_cast<double>(c.rounds);
      bytes += static_cast<double>(c.bytes_sent);
    }
  }
  state.counters["s_per_token"] = seconds / decoded;
  state.counters["rounds_per_token"] = rounds / decoded;
  state.counters["bytes_per_token"] = bytes / decoded;
}

BENCHMARK(BM_SecureGenerate<mpc::Spdz2k>)
    ->Name("SecureGenerate/malicious")
    ->Unit(benchmark::kSecond)
    ->Iterations(1);
BENCHMARK(BM_SecureGenerate<mpc::SemiHonest>)
    ->Name("SecureGenerate/semi-honest")
    ->Unit(benchmark::kSecond)
    ->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
