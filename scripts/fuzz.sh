#!/usr/bin/env bash
# Long fuzz runs of every parser (tests/fuzz), with the figures recorded:
#
#   scripts/fuzz.sh [--runs N] [--jobs J] [TARGET...]
#
# Builds the libFuzzer targets with clang (build/fuzz: ASan + UBSan + libFuzzer), writes
# fresh seed corpora from real inputs, then runs each target for N executions (default
# 1,000,000) with leak detection, a 10 s per-input timeout and a 256 MB per-allocation
# limit. The corpus each run grows is kept in build/fuzz/fuzz/corpus/<target>; a crash,
# leak, timeout or over-limit allocation stops that target with its input saved in
# build/fuzz/fuzz/artifacts/ and makes the script fail. Prints one Markdown table row per
# target (the table of docs/fuzzing.md).
#
#   MPCACHE_MODEL_DIR   the real tokenizer files seed the tokenizer target (default ../shared/models)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

runs=1000000
jobs=$(nproc)
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    -h|--help) sed -n 2,15p "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option '$1' (the options: --runs N, --jobs J)" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
all=(mesh_frames client_messages dealer_messages configs checkpoint tokenizer share_file)
if [ ${#targets[@]} -eq 0 ]; then targets=("${all[@]}"); fi
for t in "${targets[@]}"; do
  if [[ ! " ${all[*]} " =~ " $t " ]]; then
    echo "fuzz.sh: unknown target '$t' (the targets: ${all[*]})" >&2
    exit 2
  fi
done

./scripts/install-deps.sh --fuzz
. "$root/scripts/model-dir.sh"
resolve_model_dir fuzz.sh "$root"

build=build/fuzz
cmake -S . -B "$build" -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug -DMPCACHE_FUZZ=ON \
      -DMPCACHE_WERROR=ON -DMPCACHE_BUILD_TESTS=ON -DMPCACHE_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" -j"$jobs" --target mpcache-fuzz-targets
work="$build/fuzz"
rm -rf "$work/seeds"
mkdir -p "$work/artifacts" "$work/logs"
"$build/tests/fuzz/mpcache-fuzz-seeds" "$work/seeds" "$root" "$MPCACHE_MODEL_DIR"

failed=0
run_one() {
  local t=$1 log="$work/logs/$1.log" start end status=0
  mkdir -p "$work/corpus/$t"
  start=$(date +%s)
  ASAN_OPTIONS=detect_leaks=1 "$build/tests/fuzz/fuzz_$t" -runs="$runs" -timeout=10 \
      -rss_limit_mb=2048 -malloc_limit_mb=256 -print_final_stats=1 \
      -artifact_prefix="$work/artifacts/fuzz_$t-" "$work/corpus/$t" "$work/seeds/$t" \
      >"$log" 2>&1 || status=$?
  end=$(date +%s)
  local execs rate rss cov corp result
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -1)
  cov=$(grep -Eo 'cov: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)
  corp=$(find "$work/corpus/$t" -type f | wc -l)
  if [ "$status" -eq 0 ]; then result="no crash, leak or hang"; else
    result="FAILED (exit $status): see $log"
  fi
  echo "| $t | ${execs:-?} | ${rate:-?} | $((end - start)) | ${cov:-?} | $corp | ${rss:-?} | $result |" \
    >"$work/logs/$t.row"
  return "$status"
}
# Up to `jobs` targets at once (each fuzzer is one process on one core).
pids=()
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do sleep 1; done
  rm -f "$work/logs/$t.row"
  run_one "$t" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || failed=1; done
echo "| target | executions | exec/s | seconds | coverage (edges) | corpus (inputs) | peak RSS (MB) | result |"
echo "|---|---|---|---|---|---|---|---|"
for t in "${targets[@]}"; do cat "$work/logs/$t.row"; done
exit $failed
