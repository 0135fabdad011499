#!/usr/bin/env bash
# The README's main command. Installs what is missing, builds, and runs one generation
# with the default model from MPCACHE_MODEL_DIR (default ../shared/models), printing the
# text on stdout and a stats line on stderr.
#
# Status: the networked private generation (mpcache-party x3 + mpcache-dealer +
# mpcache-client over TLS) is not built yet (issues 5 and 6). Until it is, this script runs
# the plaintext reference engine — the oracle the private engine is tested against — and
# says so. It starts no background process.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

./scripts/install-deps.sh

if [ -z "${MPCACHE_MODEL_DIR:-}" ]; then
  if [ -d "$root/../shared/models" ]; then
    MPCACHE_MODEL_DIR=$(cd "$root/../shared/models" && pwd)
  else
    echo "demo.sh: set MPCACHE_MODEL_DIR to a folder with stories260K.bin and tok512.bin" \
         "(scripts/fetch-models.sh DIR downloads them)" >&2
    exit 1
  fi
fi
model="$MPCACHE_MODEL_DIR/stories260K.bin"
tok="$MPCACHE_MODEL_DIR/tok512.bin"
for f in "$model" "$tok"; do
  [ -f "$f" ] || { echo "demo.sh: missing $f (set MPCACHE_MODEL_DIR)" >&2; exit 1; }
done

prompt=${MPCACHE_DEMO_PROMPT:-"Once upon a time"}
steps=${MPCACHE_DEMO_STEPS:-64}

echo "demo.sh: building (release)..." >&2
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/release -j"$(nproc)" --target mpcache-model >/dev/null

echo "demo.sh: private generation is not available yet (issues 5, 6);" \
     "running the plaintext reference engine" >&2
./build/release/src/tools/model/mpcache-model run --model "$model" --tokenizer "$tok" \
  --prompt "$prompt" --steps "$steps" --temperature 0
