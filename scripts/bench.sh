#!/usr/bin/env bash
# Regenerates the measured figures of docs/PERFORMANCE.md on this machine (issue 16).
#
#   scripts/bench.sh [SECTION...]     sections: 7b (default: all of them)
#
#   7b   the 32-layer Llama-2-7B shape (synthetic weights written as a real GGUF Q8_0 file by
#        `mpcache-model synth --dims 7b`, 6.7 GB, made once), public weights, greedy, prompt
#        "Once", 3 positions: in process (`mpcache-bench generate`, per-phase breakdown) and
#        through the three TLS daemons and the dealer on loopback (`mpcache-client generate`;
#        the daemons' summed PSS sampled every 2 s, dealer bytes from their /metrics), in
#        malicious and semi-honest security. ~10 minutes on 2 cores; needs ~22 GB of memory.
#
#   MPCACHE_MODEL_DIR   folder with tokenizer.bin (the 32 000-token Llama-2 tokenizer)
#   MPCACHE_BENCH_DIR   where the synthetic model and the results go (default build/bench)
#   MPCACHE_BUILD_DIR   the release build to use (default build/release; built if needed)
#   MPCACHE_BENCH_BUILD    1 (default): configure and build the tools in MPCACHE_BUILD_DIR
#                       first; 0: use the binaries already there as they are (e.g. another
#                       checkout's build, which must not be reconfigured from this one)
#   MPCACHE_BENCH_7B_DIMS  the 7b section's shape (default 7b; e.g. 256x2x4 to try the
#                       script in a minute)
#
# Results: $MPCACHE_BENCH_DIR/7b/*.json (one JSON object per run), daemon logs and metrics,
# and $MPCACHE_BENCH_DIR/7b.md, the table docs/PERFORMANCE.md quotes.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

sections=("$@")
[ ${#sections[@]} -gt 0 ] || sections=(7b)
for s in "${sections[@]}"; do
  case "$s" in
    7b) ;;
    *) echo "bench.sh: unknown section '$s' (the sections: 7b)" >&2; exit 2 ;;
  esac
done

./scripts/install-deps.sh --bench
. "$root/scripts/model-dir.sh"
resolve_model_dir bench.sh "$root"
tokenizer=$MPCACHE_MODEL_DIR/tokenizer.bin
[ -f "$tokenizer" ] || { echo "bench.sh: missing $tokenizer (the Llama-2 tokenizer)" >&2; exit 1; }

build=${MPCACHE_BUILD_DIR:-build/release}
out=${MPCACHE_BENCH_DIR:-build/bench}
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [ "${MPCACHE_BENCH_BUILD:-1}" != 0 ]; then
  echo "bench.sh: building the tools in $build ..." >&2
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DMPCACHE_BUILD_BENCH=ON >/dev/null
  cmake --build "$build" -j"$(nproc)" --target mpcache-model mpcache-bench mpcache-party \
    mpcache-dealer mpcache-client >/dev/null
fi
[ -d "$build/src/tools" ] || { echo "bench.sh: no tools in $build/src/tools (MPCACHE_BUILD_DIR)" >&2; exit 1; }
bin=$(cd "$build/src/tools" && pwd)
./deploy/gen-certs.sh build/certs >/dev/null
certs=$root/build/certs
steps=3  # positions of every 7b run: BOS, "Once", one decoded token

# A top-level field of a JSON file (the tools' --json output): json FILE KEY [SCALE]
# prints it (divided by SCALE when given); a list's last element with KEY[-1].
json() {
  python3 - "$@" <<'PY'
import json, sys
path, key = sys.argv[1], sys.argv[2]
d = json.load(open(path))
for part in key.split("."):
    d = d[-1] if part == "[-1]" else d[part]
if len(sys.argv) > 3:
    d = d / float(sys.argv[3])
print(round(d, 2) if isinstance(d, float) else d)
PY
}
metric() { awk -v m="$2" '$1 == m {print $2}' "$1" | head -n 1; }

# The three parties, the dealer and the client through the daemons: one generation.
# daemons_run SECURITY MODEL DIR
daemons_run() {
  local security=$1 model=$2 dir=$3
  mkdir -p "$dir/cfg"
  for f in dealer party0 party1 party2 client; do
    sed -e "s#\.\./build/certs#$certs#" \
        -e "s#checkpoint: .*#checkpoint: $model#" \
        -e "s#tokenizer: .*#tokenizer: $tokenizer#" \
        -e "s#recv_ms: 30000#recv_ms: 600000#" \
        -e "s#request_ms: 600000#request_ms: 7200000#" \
        -e "s#^security: malicious#security: $security#" \
        "config/$f.yaml" >"$dir/cfg/$f.yaml"
  done
  (
    . "$root/scripts/daemons.sh"
    sampler=
    trap '[ -n "$sampler" ] && kill "$sampler" 2>/dev/null; daemons_stop' EXIT
    daemon_start bench.sh dealer "$dir/dealer.log" "$bin/dealer/mpcache-dealer" \
      --config "$dir/cfg/dealer.yaml"
    for i in 0 1 2; do
      daemon_start bench.sh "party$i" "$dir/party$i.log" "$bin/party/mpcache-party" \
        --config "$dir/cfg/party$i.yaml"
    done
    # The daemons' PSS summed (KiB; the model's shared pages counted once), every 2 s and
    # once more when the client is done (a run shorter than a sample is still measured).
    echo 0 >"$dir/peak_pss_kb"
    sample_pss() {
      local sum=0 pid v
      for pid in "${daemon_pids[@]}"; do
        v=$(awk '/^Pss:/ {print $2}' "/proc/$pid/smaps_rollup" 2>/dev/null || true)
        sum=$((sum + ${v:-0}))
      done
      if [ "$sum" -gt "$(cat "$dir/peak_pss_kb")" ]; then echo "$sum" >"$dir/peak_pss_kb"; fi
    }
    (while true; do sample_pss; sleep 2; done) &
    sampler=$!
    "$bin/client/mpcache-client" generate --config "$dir/cfg/client.yaml" --prompt "Once" \
      --max-tokens "$steps" --json >"$dir/client.json"
    kill "$sampler" 2>/dev/null || true
    wait "$sampler" 2>/dev/null || true
    sampler=
    sample_pss
    for i in 0 1 2; do curl -s "http://127.0.0.1:910$i/metrics" >"$dir/metrics$i.txt"; done
  )
}

section_7b() {
  local dims=${MPCACHE_BENCH_7B_DIMS:-7b}
  local dir=$out/7b model=$out/synth-$dims-q8_0.gguf
  mkdir -p "$dir"
  if [ ! -f "$model" ]; then
    echo "bench.sh: writing the synthetic $dims model (7b: 6.7 GB) to $model ..." >&2
    "$bin/model/mpcache-model" synth --dims "$dims" --out "$model.part" --json >"$dir/synth.json"
    mv "$model.part" "$model"
  fi
  local table=$out/7b.md
  {
    echo "Shape $dims, $(nproc) cores, $(date -u +%Y-%m-%d), $(git -C "$root" rev-parse --short HEAD)."
    echo
    echo "| security | where | s/token | party-to-party bytes/token | rounds/token | dealer bytes/position (corrector) | peak memory | text |"
    echo "|---|---|---|---|---|---|---|---|"
  } >"$table"
  for security in malicious semi-honest; do
    echo "bench.sh: 7B, $security, in process ..." >&2
    local j=$dir/inprocess-$security.json
    "$bin/bench/mpcache-bench" generate --model "$model" --tokenizer "$tokenizer" --prompt "Once" \
      --steps "$steps" --security "$security" --weights public --json >"$j"
    local dealer
    dealer=$(python3 - "$j" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
o = d["offline"]
print(round((o["bytes_to_party"][-1] + o["bit_dealer_correction_bytes"]) / d["positions"] / 1e9, 2))
PY
)
    printf '| %s | in process | %s | %s MB | %s | %s GB | %s GiB RSS | %s |\n' "$security" \
      "$(json "$j" seconds_per_token)" "$(json "$j" bytes_per_token 1e6)" \
      "$(json "$j" rounds_per_token)" "$dealer" "$(json "$j" peak_rss_bytes 1073741824)" \
      "$(json "$j" text)" >>"$table"

    echo "bench.sh: 7B, $security, through the daemons ..." >&2
    local d=$dir/daemons-$security
    daemons_run "$security" "$model" "$d"
    local c=$d/client.json corrected=0 m
    for m in "$d"/metrics[012].txt; do
      corrected=$((corrected + $(metric "$m" mpcache_dealer_corrected_bytes_total | cut -d. -f1)))
    done
    printf '| %s | three daemons + dealer (TLS, loopback) | %s | %s MB | %s | %s GB | %s GiB PSS | %s |\n' \
      "$security" "$(json "$c" seconds_per_token)" "$(json "$c" bytes_per_token 1e6)" \
      "$(json "$c" rounds_per_token)" "$(awk -v b="$corrected" -v p="$steps" 'BEGIN {printf "%.2f", b / p / 1e9}')" \
      "$(awk -v k="$(cat "$d/peak_pss_kb")" 'BEGIN {printf "%.1f", k / 1048576}')" "$(json "$c" text)" >>"$table"
  done
  {
    echo
    echo "Per phase, in process (s/token; party-to-party MB/token; rounds/token):"
    echo
    python3 - "$dir/inprocess-malicious.json" "$dir/inprocess-semi-honest.json" <<'PY'
import json, sys
m, s = (json.load(open(p))["phases"] for p in sys.argv[1:3])
print("| phase | malicious s | malicious MB | semi-honest s | semi-honest MB | rounds |")
print("|---|---|---|---|---|---|")
for k in sorted(m, key=lambda k: -m[k]["seconds_per_token"]):
    a, b = m[k], s.get(k, {"seconds_per_token": 0, "bytes_per_token": 0})
    if a["seconds_per_token"] < 0.005 and a["bytes_per_token"] == 0:
        continue
    print(f"| {k} | {a['seconds_per_token']:.2f} | {a['bytes_per_token'] / 1e6:.1f} | "
          f"{b['seconds_per_token']:.2f} | {b['bytes_per_token'] / 1e6:.1f} | {a['rounds_per_token']:.0f} |")
PY
  } >>"$table"
  echo "bench.sh: the 7B table is in $table" >&2
  cat "$table"
}

for s in "${sections[@]}"; do "section_$s"; done
