#!/usr/bin/env bash
# The README's main command (SPEC §11): installs what is missing, builds the daemons and
# the client, makes certificates (deploy/gen-certs.sh build/certs), starts three parties
# and the dealer on loopback as local processes (config/*.yaml as shipped), runs one
# private generation with stories260K from MPCACHE_MODEL_DIR (default ../shared/models),
# prints the text on stdout and a stats line on stderr, and stops everything it started.
#
#   MPCACHE_MODEL_DIR     folder with stories260K.bin and tok512.bin
#   MPCACHE_DEMO_PROMPT   prompt (default "Once upon a time")
#   MPCACHE_DEMO_STEPS    positions incl. the prompt (default 64)
#   MPCACHE_BUILD_DIR     build folder (default build/release)
#   MPCACHE_DEMO_KEEP=1   keep the daemons' logs (the folder is printed)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

./scripts/install-deps.sh

. "$root/scripts/model-dir.sh"
resolve_model_dir demo.sh "$root"  # the shipped configs read ${MPCACHE_MODEL_DIR:-...}
for f in stories260K.bin tok512.bin; do
  [ -f "$MPCACHE_MODEL_DIR/$f" ] || { echo "demo.sh: missing $MPCACHE_MODEL_DIR/$f" >&2; exit 1; }
done

prompt=${MPCACHE_DEMO_PROMPT:-"Once upon a time"}
steps=${MPCACHE_DEMO_STEPS:-64}
build=${MPCACHE_BUILD_DIR:-build/release}

echo "demo.sh: building mpcache-party, mpcache-dealer, mpcache-client in $build ..." >&2
# Same options as scripts/test.sh (they share build/release); only three targets are built.
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j"$(nproc)" --target mpcache-party mpcache-dealer mpcache-client >/dev/null
bin="$build/src/tools"

./deploy/gen-certs.sh build/certs >/dev/null

logs=$(mktemp -d "${TMPDIR:-/tmp}/mpcache-demo.XXXXXX")
. "$root/scripts/daemons.sh"
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  daemons_stop
  if [ "${MPCACHE_DEMO_KEEP:-0}" = "1" ] || [ "$rc" != 0 ]; then
    echo "demo.sh: daemon logs in $logs" >&2
  else
    rm -rf "$logs"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

start() {  # name, binary, config
  daemon_start demo.sh "$1" "$logs/$1.log" "$2" --config "$3"
}

echo "demo.sh: starting the dealer and parties 0, 1, 2 on loopback ..." >&2
start dealer "$bin/dealer/mpcache-dealer" config/dealer.yaml
for i in 0 1 2; do
  start "party$i" "$bin/party/mpcache-party" "config/party$i.yaml"
done

echo "demo.sh: private generation (malicious security, public weights): \"$prompt\", $steps steps" >&2
"$bin/client/mpcache-client" generate --config config/client.yaml --prompt "$prompt" \
  --max-tokens "$steps"
