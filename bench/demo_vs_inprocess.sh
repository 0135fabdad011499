#!/usr/bin/env bash
# The loopback demo's s/token against the in-process figure, measured in one sitting
# (docs/PERFORMANCE.md "The TLS mesh on loopback"; scripts/bench.sh mesh runs it):
# alternately, N times,
#   - scripts/demo.sh's deployment: mpcache-dealer and three mpcache-party daemons as
#     processes on loopback with the shipped config/*.yaml (moved to free ports and fresh
#     certificates in a temporary folder, so that it runs beside another deployment), and
#     one mpcache-client generation;
#   - mpcache-bench generate, the same generation with the three parties in one process.
# Prints one line per run (decode s/token) and the ratio of the best runs.
#
#   bench/demo_vs_inprocess.sh [N]          (default 3; MPCACHE_BUILD_DIR, MPCACHE_MODEL_DIR)
#   MPCACHE_DEMO_PROMPT, MPCACHE_DEMO_STEPS as scripts/demo.sh (default "Once upon a time", 64)
#   MPCACHE_DEMO_PORT_BASE  first of the 13 ports used (default 27100)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. "$root/scripts/model-dir.sh"
resolve_model_dir demo_vs_inprocess.sh "$root"
runs=${1:-3}
build=${MPCACHE_BUILD_DIR:-build/release}
prompt=${MPCACHE_DEMO_PROMPT:-"Once upon a time"}
steps=${MPCACHE_DEMO_STEPS:-64}
base=${MPCACHE_DEMO_PORT_BASE:-27100}
bin="$build/src/tools"
for b in party/mpcache-party dealer/mpcache-dealer client/mpcache-client bench/mpcache-bench; do
  [ -x "$bin/$b" ] || { echo "demo_vs_inprocess.sh: build $bin/$b first" >&2; exit 1; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/mpcache-demo-vs.XXXXXX")
. "$root/scripts/daemons.sh"
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  daemons_stop
  [ "$rc" = 0 ] && rm -rf "$work" || echo "demo_vs_inprocess.sh: logs in $work" >&2
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

./deploy/gen-certs.sh "$work/certs" >/dev/null
mkdir -p "$work/config"
# The shipped files with their ports moved (7100 -> base, 7200 -> base + 100), no metrics
# port, this run's certificates and the model folder.
for f in party0 party1 party2 dealer client; do
  perl -pe 's/127\.0\.0\.1:(7[12]\d\d)/"127.0.0.1:".($1 - 7100 + '"$base"')/ge;
            s/^(\s*port:\s*)\d+/${1}0/;
            s|\.\./build/certs|'"$work"'/certs|;
            s|\$\{MPCACHE_MODEL_DIR:-[^}]*\}|'"$MPCACHE_MODEL_DIR"'|' \
    config/$f.yaml >"$work/config/$f.yaml"
done

cpu_seconds() {  # user + system CPU of process $1 so far
  awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$1/stat"
}

per_token() {  # "seconds_per_token" of the JSON document on stdin
  python3 -c 'import json,sys; print(json.load(sys.stdin)["seconds_per_token"])'
}

best_tls=""
best_mem=""
for i in $(seq 1 "$runs"); do
  load=$(cut -d' ' -f1 /proc/loadavg)
  daemon_pids=()
  daemon_start demo_vs_inprocess.sh dealer "$work/dealer.log" "$bin/dealer/mpcache-dealer" \
    --config "$work/config/dealer.yaml"
  for p in 0 1 2; do
    daemon_start demo_vs_inprocess.sh "party$p" "$work/party$p.log" "$bin/party/mpcache-party" \
      --config "$work/config/party$p.yaml"
  done
  "$bin/client/mpcache-client" generate --config "$work/config/client.yaml" --prompt "$prompt" \
    --max-tokens "$steps" --json >"$work/client.json"
  cpu=""
  for pid in "${daemon_pids[@]}"; do cpu="$cpu $(cpu_seconds "$pid")"; done
  daemons_stop
  tls=$(per_token <"$work/client.json")
  /usr/bin/time -f "%U %S" -o "$work/bench.time" "$bin/bench/mpcache-bench" generate --model "$MPCACHE_MODEL_DIR/stories260K.bin" \
    --tokenizer "$MPCACHE_MODEL_DIR/tok512.bin" --prompt "$prompt" --steps "$steps" \
    --security malicious --weights public --json >"$work/bench.json"
  mem=$(per_token <"$work/bench.json")
  mem_cpu=$(awk '{ printf "%.2f", $1 + $2 }' "$work/bench.time")
  echo "run $i (load $load): daemons over TLS $tls s/token, in process $mem s/token" \
    "(CPU s: dealer, parties 0 1 2:$cpu; in process: $mem_cpu)"
  best_tls=$(python3 -c "print(min(x for x in [$tls, ${best_tls:-1e9}]))")
  best_mem=$(python3 -c "print(min(x for x in [$mem, ${best_mem:-1e9}]))")
done
python3 -c "print(f'best: daemons {$best_tls:.3f} s/token, in process {$best_mem:.3f} s/token, ratio {$best_tls/$best_mem:.2f}')"
