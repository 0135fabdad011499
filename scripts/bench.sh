#!/usr/bin/env bash
# Regenerates the measured figures of docs/PERFORMANCE.md on this machine (issue 16).
#
#   scripts/bench.sh [SECTION...]     sections: 7b layers context tune mesh ops mpspdz (default:
#                                     all of them, in that order)
#
#   7b   the 32-layer Llama-2-7B shape (synthetic weights written as a real GGUF Q8_0 file by
#        `mpcache-model synth --dims 7b`, 6.7 GB, made once), public weights, greedy, prompt
#        "Once", 3 positions: in process (`mpcache-bench generate`, per-phase breakdown) and
#        through the three TLS daemons and the dealer on loopback (`mpcache-client generate`;
#        the daemons' summed PSS sampled every 2 s, dealer bytes from their /metrics), in
#        malicious and semi-honest security, and malicious with split kings (`--open
#        split-king`, `balancer.static_king: split`: a third fewer bytes, a round more per
#        opening). ~15 minutes on 2 cores; needs ~22 GB of memory.
#
#   layers  s/token and bytes/token against the layer count: the 7B shape cut to its first L
#        layers (`mpcache-model synth --layers L`, L in MPCACHE_BENCH_LAYERS, default
#        "1 2 4 8 16 32"; each model written, run and removed), in process, both modes, the 7b
#        section's prompt and positions. Writes layers.md and layers_seconds.png,
#        layers_bytes.png. ~8 minutes on 2 cores; up to 12.5 GiB of memory at 32 layers.
#
#   context  one decoding step of one 7B-shaped layer (dim 4096, 32 heads, FFN 11 008;
#        `mpcache-bench decode-step --dims 7b --layers 1`, synthetic K/V of C positions
#        secret-shared first) at contexts C, full cache against MPCache at the 7B settings
#        README.md and docs/secure-llama.md quote (clusters of 64, 10% kept, sub-clusters
#        of 16, 4% of the context's sub-clusters attended, mean representatives), malicious
#        (or semi-honest: MPCACHE_BENCH_CONTEXT_SECURITY), in process. Writes context.md (the
#        table) and context_seconds.png, context_bytes.png (gnuplot; copy them to docs/img/
#        for the report).
#        ~5 minutes on 2 cores at the default contexts; ~19 GiB of memory at 4096 (full).
#
#   tune  `mpcache-tune` on stories260K (docs/tuning.md): the standard grid, 256 positions per
#        generation, calibration prompts bench/data/prompts.txt, held-out
#        bench/data/heldout_prompts.txt, floor agreement:0.95 at 95% confidence, malicious.
#        Writes tune.md (its output: every candidate, the choice, the check of the chosen
#        step's predicted cost against a measured one, the held-out line), tune.yaml (the
#        fragment) and tune_frontier.png (copy it to docs/img/). ~12 minutes on 2 cores.
#
#   mesh  the TLS mesh on loopback (scripts/bench-mesh.sh): one MPC round of three parties
#        (bench_mesh's BM_MeshRound/8, MPCACHE_BENCH_MESH_REPETITIONS repetitions, default 5)
#        and the stories260K demo through the four daemons against in process
#        (bench/demo_vs_inprocess.sh, MPCACHE_BENCH_DEMO_RUNS alternate runs, default 3).
#        Writes mesh.md. ~4 minutes on 2 cores.
#
#   ops  per-op throughput (scripts/bench-ops.sh): every op of `mpcache-bench ops` at the
#        size the model meets it, malicious and semi-honest, in process, the median of
#        MPCACHE_BENCH_OPS_REPEAT timed runs (default 3). Writes ops.md and ops_throughput.png.
#        ~3 minutes on 2 cores; up to ~2 GiB of memory.
#
#   mpspdz  per op against MP-SPDZ at its best options (issue 16): the anchors' programs
#        ($MPCACHE_SHARED/anchors/mpspdz, default ../shared beside the checkout: 1M products,
#        100K sfix comparisons, softmax over 1024; online only, fake preprocessing, -R 64 -Y,
#        spdz2k and semi2k, in a podman/docker container or, with MPCACHE_MPSPDZ_CHROOT, in a
#        chroot of the same packages: scripts/mpspdz-chroot.sh) against `mpcache-bench ops --op
#        mul|lt|softmax` in malicious and semi-honest security, comparisons at MP-SPDZ's sfix
#        width (31 bits) and at the kernels' default. Writes mpspdz.md (time, MB, rounds,
#        ratios; scripts/mpspdz-table.py). Needs MPCACHE_MPSPDZ_SRC, an MP-SPDZ tree with
#        deps/SimpleOT and deps/SimplestOT_C filled at its pinned commits; without it the
#        section is skipped when run by default and an error when named. The first run
#        builds the image and MP-SPDZ and makes its fake preprocessing (~17 minutes on 2
#        cores); after that the section takes ~4 minutes (three MP-SPDZ runs, then ours).
#
#   MPCACHE_MODEL_DIR   folder with tokenizer.bin (the 32 000-token Llama-2 tokenizer; 7b only)
#   MPCACHE_BENCH_DIR   where the synthetic model and the results go (default build/bench)
#   MPCACHE_BUILD_DIR   the release build to use (default build/release; built if needed)
#   MPCACHE_BENCH_BUILD    1 (default): configure and build the tools in MPCACHE_BUILD_DIR
#                       first; 0: use the binaries already there as they are (e.g. another
#                       checkout's build, which must not be reconfigured from this one)
#   MPCACHE_BENCH_7B_DIMS  the 7b section's shape (default 7b; e.g. 256x2x4 to try the
#                       script in a minute)
#   MPCACHE_BENCH_CONTEXT_DIMS  the context section's shape (default 7b; e.g. 256x1x4)
#   MPCACHE_BENCH_TUNE_GRID, MPCACHE_BENCH_TUNE_STEPS  the tune section's grid and positions
#                       (default standard, 256; a smoke run: quick and 64, ~30 s)
#   MPCACHE_BENCH_CONTEXT_SECURITY  malicious (default: context.md, context_*.png) or
#                       semi-honest (context-semi-honest.md, context-semi-honest_*.png)
#   MPCACHE_BENCH_CONTEXT_PROFILE  none (default: the in-memory mesh), or lan / wan: the three
#                       parties' TLS mesh across deploy/netns/netns.sh's namespaces with links
#                       shaped by that profile (lan: 1 Gbit/s, 0.1 ms one way; wan: 100 Mbit/s,
#                       20 ms one way; SPEC §10), as context[-semi-honest]-lan.md / -wan.md and
#                       their plots. Needs root; ~15 min (lan) / ~35 min (wan) at the default
#                       contexts.
#   MPCACHE_BENCH_CONTEXTS      its contexts (default "256 512 1024 2048 4096"; a smoke run:
#                       MPCACHE_BENCH_CONTEXT_DIMS=256x1x4 MPCACHE_BENCH_CONTEXTS="128 256",
#                       ~20 s)
#   MPCACHE_MPSPDZ_SRC  the MP-SPDZ tree of the mpspdz section (see above)
#   MPCACHE_MPSPDZ_CHROOT  run MP-SPDZ in this chroot (made by scripts/mpspdz-chroot.sh make
#                       the first time: debootstrap, root) instead of a podman/docker container
#   MPCACHE_SHARED      the folder holding anchors/mpspdz (default ../shared beside the checkout)
#   MPCACHE_BENCH_MPSPDZ_RUNS  runs of MP-SPDZ's programs, medians taken (default 3)
#
# Results: $MPCACHE_BENCH_DIR/7b/*.json (one JSON object per run), daemon logs and metrics,
# and $MPCACHE_BENCH_DIR/7b.md, the table docs/PERFORMANCE.md quotes;
# $MPCACHE_BENCH_DIR/layers/*.json, layers.md and its two PNGs;
# $MPCACHE_BENCH_DIR/context/*.json, $MPCACHE_BENCH_DIR/context.md and the two PNGs;
# $MPCACHE_BENCH_DIR/tune.md, tune.yaml and tune_frontier.png;
# $MPCACHE_BENCH_DIR/mesh/ (bench_mesh's JSON, the demo runs) and $MPCACHE_BENCH_DIR/mesh.md;
# $MPCACHE_BENCH_DIR/ops/ (one JSON per op and mode), ops.md and ops_throughput.png;
# $MPCACHE_BENCH_DIR/mpspdz/ (MP-SPDZ's output, our JSON) and $MPCACHE_BENCH_DIR/mpspdz.md.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

sections=("$@")
named=1  # sections named on the command line: a missing MP-SPDZ tree is an error, not a skip
[ ${#sections[@]} -gt 0 ] || { sections=(7b layers context tune mesh ops mpspdz); named=0; }
mpspdz_anchors=${MPCACHE_SHARED:-$root/../shared}/anchors/mpspdz
[ ! -d "$mpspdz_anchors" ] || mpspdz_anchors=$(cd "$mpspdz_anchors" && pwd)
# Why the mpspdz section cannot run (nothing when it can).
mpspdz_missing() {
  local src=${MPCACHE_MPSPDZ_SRC:-}
  if [ -z "$src" ]; then
    echo "MPCACHE_MPSPDZ_SRC is not set"
  elif [ ! -f "$src/compile.py" ] || [ ! -f "$src/Makefile" ]; then
    echo "MPCACHE_MPSPDZ_SRC=$src is not an MP-SPDZ source tree"
  elif [ ! -f "$src/deps/SimpleOT/Makefile" ] || [ ! -d "$src/deps/SimplestOT_C/ref10" ]; then
    echo "deps/SimpleOT or deps/SimplestOT_C is empty in $src"
  elif [ ! -x "$mpspdz_anchors/bench.sh" ]; then
    echo "no $mpspdz_anchors/bench.sh (set MPCACHE_SHARED to the folder holding anchors/)"
  elif [ -z "${MPCACHE_MPSPDZ_CHROOT:-}" ] && ! command -v podman >/dev/null &&
    ! command -v docker >/dev/null; then
    echo "neither podman nor docker is installed (or set MPCACHE_MPSPDZ_CHROOT=DIR: a chroot" \
      "scripts/mpspdz-chroot.sh makes, needs root)"
  fi
}
mpspdz_how="Get a tree: git clone https://github.com/data61/MP-SPDZ DIR &&
  git -C DIR submodule update --init deps/SimpleOT deps/SimplestOT_C (the commits DIR pins),
  then MPCACHE_MPSPDZ_SRC=DIR scripts/bench.sh mpspdz ($mpspdz_anchors/README.md)"
need_7b=0
need_models=0
for s in "${sections[@]}"; do
  case "$s" in
    7b|layers) need_7b=1; need_models=1 ;;
    context|ops) ;;
    tune|mesh) need_models=1 ;;
    mpspdz)
      why=$(mpspdz_missing)
      if [ -n "$why" ] && [ "$named" = 1 ]; then
        echo "bench.sh: the mpspdz section cannot run: $why. $mpspdz_how" >&2
        exit 1
      fi ;;
    *) echo "bench.sh: unknown section '$s' (the sections: 7b, layers, context, tune, mesh, ops, mpspdz)" >&2
       exit 2 ;;
  esac
done

./scripts/install-deps.sh --bench
if [ "$need_models" = 1 ]; then
  . "$root/scripts/model-dir.sh"
  resolve_model_dir bench.sh "$root"
fi
if [ "$need_7b" = 1 ]; then
  tokenizer=$MPCACHE_MODEL_DIR/tokenizer.bin
  [ -f "$tokenizer" ] || { echo "bench.sh: missing $tokenizer (the Llama-2 tokenizer)" >&2; exit 1; }
fi

build=${MPCACHE_BUILD_DIR:-build/release}
out=${MPCACHE_BENCH_DIR:-build/bench}
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [ "${MPCACHE_BENCH_BUILD:-1}" != 0 ]; then
  echo "bench.sh: building the tools in $build ..." >&2
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DMPCACHE_BUILD_BENCH=ON >/dev/null
  cmake --build "$build" -j"$(nproc)" --target mpcache-model mpcache-bench mpcache-party \
    mpcache-dealer mpcache-client mpcache-tune mpcache-netdelay bench_mesh >/dev/null
fi
[ -d "$build/src/tools" ] || { echo "bench.sh: no tools in $build/src/tools (MPCACHE_BUILD_DIR)" >&2; exit 1; }
bin=$(cd "$build/src/tools" && pwd)
if [ "$need_7b" = 1 ]; then
  ./deploy/gen-certs.sh build/certs >/dev/null
  certs=$root/build/certs
fi
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
# daemons_run SECURITY MODEL DIR [KING]  (KING: balancer.static_king, default none)
daemons_run() {
  local security=$1 model=$2 dir=$3 king=${4:-none}
  mkdir -p "$dir/cfg"
  for f in dealer party0 party1 party2 client; do
    sed -e "s#\.\./build/certs#$certs#" \
        -e "s#checkpoint: .*#checkpoint: $model#" \
        -e "s#tokenizer: .*#tokenizer: $tokenizer#" \
        -e "s#recv_ms: 30000#recv_ms: 600000#" \
        -e "s#request_ms: 600000#request_ms: 7200000#" \
        -e "s#^security: malicious#security: $security#" \
        -e "s#static_king: none#static_king: $king#" \
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
  # Rows: both modes with all-to-all openings, then malicious with split kings (every party
  # the king of a third of each opening: a third fewer bytes, a round more per opening).
  local row security open label
  for row in malicious semi-honest malicious/split-king; do
    security=${row%%/*} open=all-to-all label=$security
    if [ "$row" != "$security" ]; then open=${row#*/} label="$security, split kings"; fi
    echo "bench.sh: 7B, $label, in process ..." >&2
    local j=$dir/inprocess-$security.json
    [ "$open" = all-to-all ] || j=$dir/inprocess-$security-$open.json
    "$bin/bench/mpcache-bench" generate --model "$model" --tokenizer "$tokenizer" --prompt "Once" \
      --steps "$steps" --security "$security" --weights public --open "$open" --json >"$j"
    local dealer
    dealer=$(python3 - "$j" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
o = d["offline"]
print(round((o["bytes_to_party"][-1] + o["bit_dealer_correction_bytes"]) / d["positions"] / 1e9, 2))
PY
)
    printf '| %s | in process | %s | %s MB | %s | %s GB | %s GiB RSS | %s |\n' "$label" \
      "$(json "$j" seconds_per_token)" "$(json "$j" bytes_per_token 1e6)" \
      "$(json "$j" rounds_per_token)" "$dealer" "$(json "$j" peak_rss_bytes 1073741824)" \
      "$(json "$j" text)" >>"$table"

    echo "bench.sh: 7B, $label, through the daemons ..." >&2
    local d=$dir/daemons-$security
    [ "$open" = all-to-all ] || d=$dir/daemons-$security-$open
    daemons_run "$security" "$model" "$d" "$([ "$open" = split-king ] && echo split || echo none)"
    local c=$d/client.json corrected=0 m
    for m in "$d"/metrics[012].txt; do
      corrected=$((corrected + $(metric "$m" mpcache_dealer_corrected_bytes_total | cut -d. -f1)))
    done
    printf '| %s | three daemons + dealer (TLS, loopback) | %s | %s MB | %s | %s GB | %s GiB PSS | %s |\n' \
      "$label" "$(json "$c" seconds_per_token)" "$(json "$c" bytes_per_token 1e6)" \
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

# section_context: scripts/bench-context.sh; section_mesh: scripts/bench-mesh.sh; section_ops:
# scripts/bench-ops.sh; section_mpspdz: scripts/bench-mpspdz.sh.
# shellcheck source=scripts/bench-context.sh
source "$root/scripts/bench-context.sh"
# shellcheck source=scripts/bench-mesh.sh
source "$root/scripts/bench-mesh.sh"
# shellcheck source=scripts/bench-ops.sh
source "$root/scripts/bench-ops.sh"
# shellcheck source=scripts/bench-mpspdz.sh
source "$root/scripts/bench-mpspdz.sh"

# s/token and bytes/token against the number of layers: the 7B shape cut to its first L
# layers (mpcache-model synth --layers L), both modes, in process (the 7b section's procedure;
# each cut model is written, run and removed).
section_layers() {
  local dims=${MPCACHE_BENCH_7B_DIMS:-7b} layers=${MPCACHE_BENCH_LAYERS:-1 2 4 8 16 32}
  local dir=$out/layers l security
  rm -rf "$dir"
  mkdir -p "$dir"
  for l in $layers; do
    local model=$dir/synth-$dims-$l.gguf
    echo "bench.sh: layers $l: writing the synthetic $dims model cut to $l layers ..." >&2
    "$bin/model/mpcache-model" synth --dims "$dims" --layers "$l" --out "$model" >/dev/null
    for security in malicious semi-honest; do
      echo "bench.sh: layers $l, $security, in process ..." >&2
      "$bin/bench/mpcache-bench" generate --model "$model" --tokenizer "$tokenizer" \
        --prompt "Once" --steps "$steps" --security "$security" --weights public \
        --json >"$dir/$security-$l.json"
    done
    rm -f "$model"
  done
  local table=$out/layers.md
  {
    echo "Shape $dims cut to L layers, public weights, in process, $steps positions (1 decoded);" \
      "$(nproc) cores, $(date -u +%Y-%m-%d), bench.sh at $(git -C "$root" rev-parse --short HEAD)."
    echo
  } >"$table"
  # shellcheck disable=SC2086  # the layer counts are words
  python3 - "$dir" $layers >>"$table" <<'PY'
import json, sys
d, layers = sys.argv[1], [int(x) for x in sys.argv[2:]]
r = {(s, l): json.load(open(f"{d}/{s}-{l}.json")) for s in ("malicious", "semi-honest")
     for l in layers}
print("| layers | malicious s/token | malicious MB/token | semi-honest s/token "
      "| semi-honest MB/token | rounds/token (malicious) | dealer GB/position (malicious) |")
print("|---|---|---|---|---|---|---|")
with open(f"{d}/plot.dat", "w") as out:
    out.write("# layers mal_s mal_MB semi_s semi_MB\n")
    for l in layers:
        m, s = r[("malicious", l)], r[("semi-honest", l)]
        o = m["offline"]
        dealer = (o["bytes_to_party"][-1] + o["bit_dealer_correction_bytes"]) / m["positions"]
        print(f"| {l} | {m['seconds_per_token']:.2f} | {m['bytes_per_token'] / 1e6:.1f} "
              f"| {s['seconds_per_token']:.2f} | {s['bytes_per_token'] / 1e6:.1f} "
              f"| {m['rounds_per_token']:.0f} | {dealer / 1e9:.2f} |")
        out.write(f"{l} {m['seconds_per_token']} {m['bytes_per_token'] / 1e6} "
                  f"{s['seconds_per_token']} {s['bytes_per_token'] / 1e6}\n")
PY
  gnuplot <<GP
set terminal png size 900,560 font ",11"
set xlabel "layers"
set key top left Left reverse
set grid
set xrange [0:*]
set yrange [0:*]
set style data linespoints
set title "${dims} cut to L layers: one decoded token, in process ($(nproc) cores)"
set output "$out/layers_seconds.png"
set ylabel "seconds per token"
plot "$dir/plot.dat" using 1:2 title "malicious" lw 2 pt 7, "" using 1:4 title "semi-honest" lw 2 pt 5
set output "$out/layers_bytes.png"
set ylabel "MB per token each party sends"
plot "$dir/plot.dat" using 1:3 title "malicious" lw 2 pt 7, "" using 1:5 title "semi-honest" lw 2 pt 5
GP
  echo "bench.sh: the layers table is in $table, the plots in $out/layers_seconds.png and" \
    "$out/layers_bytes.png" >&2
  cat "$table"
}

# mpcache-tune on stories260K (docs/tuning.md quotes tune.md and the plot).
section_tune() {
  local grid=${MPCACHE_BENCH_TUNE_GRID:-standard} steps=${MPCACHE_BENCH_TUNE_STEPS:-256}
  local args=(--model "$MPCACHE_MODEL_DIR/stories260K.bin"
    --tokenizer "$MPCACHE_MODEL_DIR/tok512.bin" --prompts "$root/bench/data/prompts.txt"
    --heldout "$root/bench/data/heldout_prompts.txt" --floor agreement:0.95 --grid "$grid"
    --steps "$steps" --security malicious)
  echo "bench.sh: mpcache-tune, $grid grid, $steps positions ..." >&2
  {
    local shown=("${args[@]//$MPCACHE_MODEL_DIR\//}")
    echo "\`mpcache-tune ${shown[*]//$root\//} --all\` ($(nproc) cores," \
      "$(date -u +%Y-%m-%d), bench.sh at $(git -C "$root" rev-parse --short HEAD)):"
    echo
    echo '```'
    "$bin/tune/mpcache-tune" "${args[@]}" --all --plot "$out/tune_frontier.png" \
      --out "$out/tune.yaml"
    echo '```'
  } >"$out/tune.md"
  echo "bench.sh: the tuning run is in $out/tune.md, its plot in $out/tune_frontier.png" >&2
  cat "$out/tune.md"
}

for s in "${sections[@]}"; do "section_$s"; done
