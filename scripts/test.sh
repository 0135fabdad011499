#!/usr/bin/env bash
# The test command (README, and what .ci/run runs): installs what is missing, builds
# (warnings as errors), runs the test suite, runs the unit tests again under
# AddressSanitizer + UndefinedBehaviorSanitizer, then runs every fuzz target (libFuzzer,
# clang, ASan + UBSan) for a few seconds from its seed corpus (scripts/fuzz.sh runs them
# long: docs/fuzzing.md).
#
#   MPCACHE_MODEL_DIR   folder with stories260K.bin, tok512.bin, ... (default ../shared/models)
#   MPCACHE_TEST_HEAVY  1 to include tests labelled `heavy` (default: off)
#   MPCACHE_TEST_CONTAINERS  1 to include the `containers` test (builds the image and runs
#                       four containers, ~10 min; scripts/container-test.sh; default: off)
#   MPCACHE_SKIP_ASAN   1 to skip the sanitizer pass (local iteration only)
#   MPCACHE_SKIP_FUZZ   1 to skip the fuzz pass (local iteration only)
#   MPCACHE_FUZZ_SECONDS  seconds per fuzz target in the fuzz pass (default 3)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

./scripts/install-deps.sh --tests

. "$root/scripts/model-dir.sh"
resolve_model_dir test.sh "$root"
jobs=$(nproc)

skip_labels=()
if [ "${MPCACHE_TEST_HEAVY:-0}" != "1" ]; then skip_labels+=(heavy); fi
if [ "${MPCACHE_TEST_CONTAINERS:-0}" != "1" ]; then skip_labels+=(containers); fi
label_args=()
if [ ${#skip_labels[@]} -gt 0 ]; then
  label_args=(-LE "^($(IFS='|'; echo "${skip_labels[*]}"))\$")
fi

echo "== release build (warnings as errors)" >&2
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DMPCACHE_WERROR=ON \
      -DMPCACHE_BUILD_TESTS=ON -DMPCACHE_BUILD_BENCH=ON >/dev/null
cmake --build build/release -j"$jobs"
echo "== test suite" >&2
ctest --test-dir build/release --no-tests=error --output-on-failure -j"$jobs" "${label_args[@]}"

if [ "${MPCACHE_SKIP_ASAN:-0}" != "1" ]; then
  echo "== unit tests under ASan/UBSan" >&2
  cmake -S . -B build/asan -DCMAKE_BUILD_TYPE=Debug -DMPCACHE_SANITIZE=ON -DMPCACHE_WERROR=ON \
        -DMPCACHE_BUILD_TESTS=ON -DMPCACHE_BUILD_BENCH=OFF >/dev/null
  cmake --build build/asan -j"$jobs" --target mpcache-unit-tests
  ctest --test-dir build/asan --no-tests=error --output-on-failure -j"$jobs" -L unit
fi

if [ "${MPCACHE_SKIP_FUZZ:-0}" != "1" ]; then
  echo "== fuzz targets (libFuzzer, clang, ASan/UBSan), ${MPCACHE_FUZZ_SECONDS:-3} s each" >&2
  ./scripts/install-deps.sh --fuzz
  cmake -S . -B build/fuzz -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug \
        -DMPCACHE_FUZZ=ON -DMPCACHE_WERROR=ON -DMPCACHE_BUILD_TESTS=ON -DMPCACHE_BUILD_BENCH=OFF \
        -DMPCACHE_FUZZ_SECONDS="${MPCACHE_FUZZ_SECONDS:-3}" >/dev/null
  cmake --build build/fuzz -j"$jobs" --target mpcache-fuzz-targets
  ctest --test-dir build/fuzz --no-tests=error --output-on-failure -j"$jobs" -L fuzz
fi
