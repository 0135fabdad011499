# shellcheck shell=bash disable=SC2154  # $bin, $out, $root: set by bench.sh
# The ops section of scripts/bench.sh (sourced by it: uses its variables and is not run on
# its own). Issue 16's per-op throughput: every op of `mpcache-bench ops` at the size the
# model meets it (or the size docs/comparison-benchmarks.md has measured it at), malicious and
# semi-honest, three parties in one process (in-memory mesh), the median of
# MPCACHE_BENCH_OPS_REPEAT timed runs (default 3) after an untimed warm-up where the op has
# one; each run's preprocessing made offline first. Writes ops.md (the table) and
# ops_throughput.png (ops per second, log scale).
section_ops() {
  local dir=$out/ops repeat=${MPCACHE_BENCH_OPS_REPEAT:-3} spec op n security
  rm -rf "$dir"
  mkdir -p "$dir"
  # op:n — products and truncations at a million; a 1 x 1024 . 1024 x 1024 secret product;
  # comparisons at 100K; the row ops at one row of the stories260K/7B widths; the per-row
  # inverses at a head count's worth of rows (they compare each value with all their bucket
  # starts: 71 for recip, 207 for rsqrt).
  local specs=(mul:1000000 trunc:1000000 matmul:1024 lt:100000 max:1024 argmax:512
    argmax:32000 topk:1024 exp:10000 silu:10000 recip:1024 rsqrt:64 softmax:1024 rmsnorm:4096)
  local load
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  for spec in "${specs[@]}"; do
    op=${spec%%:*} n=${spec#*:}
    for security in malicious semi-honest; do
      echo "bench.sh: ops: $op n=$n, $security ..." >&2
      "$bin/bench/mpcache-bench" ops --op "$op" --n "$n" --security "$security" \
        --repeat "$repeat" --json >"$dir/$op-$n-$security.json"
    done
  done
  {
    echo "$(nproc) cores ($(lscpu | sed -n 's/^Model name: *//p' | head -n 1)), $(date -u +%Y-%m-%d);" \
      "bench.sh at $(git -C "$root" rev-parse --short HEAD); median of $repeat timed runs;" \
      "load average before: $load."
    echo
    python3 - "$dir" "${specs[@]}" <<'PY'
import json, sys
d, specs = sys.argv[1], [s.split(":") for s in sys.argv[2:]]
print("| op | n | security | online s | ops/s | MB/party | rounds (op + check) "
      "| bytes = theory | dealer MB/party | max abs error |")
print("|---|---|---|---|---|---|---|---|---|---|")
with open(f"{d}/plot.dat", "w") as out:
    out.write("# label mal_ops_per_s semi_ops_per_s\n")
    for op, n in specs:
        rate = {}
        for sec in ("malicious", "semi-honest"):
            j = json.load(open(f"{d}/{op}-{n}-{sec}.json"))
            op_bytes = j.get("op_bytes_per_party", j["bytes_per_party"])
            theory = j.get("theory_bytes_per_party")
            same = "n/a" if theory is None else ("yes" if theory == op_bytes else "**no**")
            # The arithmetic ops report their rounds with the check's (no split).
            rounds = (f"{j['op_rounds']} + {j['rounds'] - j['op_rounds']}" if "op_rounds" in j
                      else f"{j['rounds']} in all")
            rate[sec] = j["ops_per_second"]
            print(f"| {op} | {n} | {sec} | {j['seconds']:.4f} | {j['ops_per_second']:.3g} "
                  f"| {j['bytes_per_party'] / 1e6:.3f} | {rounds} | {same} "
                  f"| {j['dealer_bytes_per_party'] / 1e6:.1f} | {j['max_abs_error']:.2g} |")
        out.write(f"\"{op}-{n}\" {rate['malicious']} {rate['semi-honest']}\n")
PY
  } >"$out/ops.md"
  gnuplot <<GP
set terminal png size 1100,560 font ",10"
set output "$out/ops_throughput.png"
set title "mpcache-bench ops: three parties in one process ($(nproc) cores), median of $repeat runs"
set ylabel "operations per second (log scale)"
set logscale y
set grid ytics
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set xtics rotate by -35 scale 0
set key top right
plot "$dir/plot.dat" using 2:xtic(1) title "malicious", "" using 3 title "semi-honest"
GP
  echo "bench.sh: the per-op table is in $out/ops.md, the plot in $out/ops_throughput.png" >&2
  cat "$out/ops.md"
}
