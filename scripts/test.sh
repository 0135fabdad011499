#!/usr/bin/env bash
# The test command (README, and what .ci/run runs): installs what is missing, builds
# (warnings as errors), runs the test suite, then runs the unit tests again under
# AddressSanitizer + UndefinedBehaviorSanitizer.
#
#   MPCACHE_MODEL_DIR   folder with stories260K.bin, tok512.bin, ... (default ../shared/models)
#   MPCACHE_TEST_HEAVY  1 to include tests labelled `heavy` (default: off)
#   MPCACHE_SKIP_ASAN   1 to skip the sanitizer pass (local iteration only)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

./scripts/install-deps.sh

. "$root/scripts/model-dir.sh"
resolve_model_dir test.sh "$root"
jobs=$(nproc)

label_args=(-LE heavy)
if [ "${MPCACHE_TEST_HEAVY:-0}" = "1" ]; then label_args=(); fi

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
