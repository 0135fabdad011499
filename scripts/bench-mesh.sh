# shellcheck shell=bash disable=SC2154  # $build, $out, $root: set by bench.sh
# The mesh section of scripts/bench.sh (sourced by it: uses its variables and is not run on
# its own). Issue 16's two figures for the TLS mesh on loopback: the latency of one MPC
# round (bench_mesh's BM_MeshRound/8: three parties in one process over real mutually
# authenticated TLS 1.3 connections, each sends 8 bytes to both peers and waits for both;
# target <= 0.15 ms), and the stories260K demo's s/token through the four daemons against
# the same generation in process (bench/demo_vs_inprocess.sh; target within 1.3x).
section_mesh() {
  local dir=$out/mesh
  local reps=${MPCACHE_BENCH_MESH_REPETITIONS:-5} runs=${MPCACHE_BENCH_DEMO_RUNS:-3}
  rm -rf "$dir"
  mkdir -p "$dir"
  echo "bench.sh: mesh round latency (bench_mesh, $reps repetitions) ..." >&2
  "$build/bench/bench_mesh" --benchmark_filter='BM_MeshRound/8/|BM_MeshPingPong/8/' \
    --benchmark_repetitions="$reps" --benchmark_min_time=2 --benchmark_format=json \
    >"$dir/bench_mesh.json"
  echo "bench.sh: the stories260K demo through the daemons against in process ($runs runs) ..." >&2
  MPCACHE_BUILD_DIR=$build bench/demo_vs_inprocess.sh "$runs" | tee "$dir/demo_vs_inprocess.txt" >&2
  python3 - "$dir" "$(git rev-parse --short HEAD)" "$reps" "$runs" >"$out/mesh.md" <<'PY'
import json, os, re, sys
from datetime import date
d, rev, reps, runs = sys.argv[1:]
b = json.load(open(f"{d}/bench_mesh.json"))
def med(name, key):
    for r in b["benchmarks"]:
        if r.get("run_name") == name and r.get("aggregate_name") == "median":
            return r[key]
    raise SystemExit(f"bench.sh: no median of {name} in bench_mesh.json")
rnd, rnd_cpu = med("BM_MeshRound/8/real_time", "real_time"), med("BM_MeshRound/8/real_time", "cpu_us_per_round")
pp = med("BM_MeshPingPong/8/real_time", "real_time")
text = open(f"{d}/demo_vs_inprocess.txt").read()
m = re.search(r"best: daemons ([0-9.]+) s/token, in process ([0-9.]+) s/token, ratio ([0-9.]+)", text)
if not m:
    raise SystemExit("bench.sh: demo_vs_inprocess.sh printed no 'best:' line")
tls, mem, ratio = map(float, m.groups())
ctx = b["context"]
print(f"{ctx['num_cpus']} cores, {date.today()}; bench.sh at {rev}; load average before: "
      f"{' '.join(f'{x:.2f}' for x in ctx.get('load_avg', [])) or 'n/a'}.")
print()
print("| figure | measured | target | met |")
print("|---|---|---|---|")
print(f"| one round of the three-party TLS mesh, 8 B to each peer (BM_MeshRound/8, median of "
      f"{reps} repetitions) | {rnd:.0f} us | <= 150 us | {'yes' if rnd <= 150 else 'no'} |")
print(f"| CPU of the three parties per round | {rnd_cpu:.0f} us | | |")
print(f"| ping-pong of 8 B between two parties (two one-way hops) | {pp:.0f} us | | |")
print(f"| stories260K demo, 4 daemons over TLS / in process (best of {runs} alternate runs) | "
      f"{tls:.3f} / {mem:.3f} s/token = {ratio:.2f}x | <= 1.3x | {'yes' if ratio <= 1.3 else 'no'} |")
print()
print("Runs (bench/demo_vs_inprocess.sh):")
print()
for line in text.splitlines():
    if line.startswith("run "):
        print(f"- {line}")
PY
  echo "bench.sh: the mesh table is in $out/mesh.md" >&2
}
