# shellcheck shell=bash disable=SC2154  # $bin, $out, $root: set by bench.sh
# The context section of scripts/bench.sh (sourced by it: uses its variables and helpers
# — $bin, $out, $root, json — and is not run on its own). One decoding step of one 7B-shaped
# layer at growing contexts, full cache against MPCache.

# MPCache's flags in this section: the 7B settings README.md and docs/secure-llama.md
# ("MPCache", level 2) quote, so the figures compare with theirs.
context_mpcache_flags=(--cluster 64 --keep 0.1 --level2 16 --level2-keep 0.04 --representative mean)

# The decode-step runs of the context section: full and MPCache at every context of $contexts
# (the caller's), the JSON to DIR/$cache-$c.json; the run's wall time (setup included: the K/V
# secret-shared, representatives) and peak RSS (KiB) to DIR/$cache-$c.run. MESH...: the
# decode-step's --mesh-* flags (none: the in-memory mesh).
run_context_points() {
  local dir=$1 dims=$2 security=$3 c cache
  shift 3
  local -a flags
  for c in $contexts; do
    for cache in full mpcache; do
      flags=()
      if [ "$cache" = mpcache ]; then flags=("${context_mpcache_flags[@]}"); fi
      echo "bench.sh: context $c, $cache cache, $dims x 1 layer, $security ..." >&2
      python3 - "$dir/$cache-$c" "$bin/bench/mpcache-bench" decode-step --dims "$dims" \
        --layers 1 --context "$c" --cache "$cache" "${flags[@]}" --security "$security" \
        "$@" --json <<'PY'
import resource, subprocess, sys, time
prefix, cmd = sys.argv[1], sys.argv[2:]
start = time.monotonic()
with open(prefix + ".json", "w") as out:
    rc = subprocess.run(cmd, stdout=out, stdin=subprocess.DEVNULL).returncode
if rc:
    sys.exit(rc)
with open(prefix + ".run", "w") as out:
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    out.write(f"{time.monotonic() - start:.1f} {rss}\n")
PY
    done
  done
}

# One decoding step of one layer at growing contexts, full cache against MPCache (malicious
# or semi-honest; in process, or between network namespaces with a lan / wan profile).
section_context() {
  local dims=${MPCACHE_BENCH_CONTEXT_DIMS:-7b}
  local contexts=${MPCACHE_BENCH_CONTEXTS:-256 512 1024 2048 4096}
  local security=${MPCACHE_BENCH_CONTEXT_SECURITY:-malicious}
  # Malicious: context/, context.md, context_*.png; semi-honest: context-semi-honest...
  # none: the in-memory mesh; lan / wan: the parties' TLS mesh between network namespaces.
  local profile=${MPCACHE_BENCH_CONTEXT_PROFILE:-none}
  local name=context
  case "$security" in
    malicious) ;;
    semi-honest) name=context-semi-honest ;;
    *) echo "bench.sh: MPCACHE_BENCH_CONTEXT_SECURITY must be malicious or semi-honest," \
         "not '$security'" >&2
       return 2 ;;
  esac
  local where="in process (three parties and the dealer in one process, in-memory mesh)"
  local one_way=0  # seconds, host to host
  case "$profile" in
    none) ;;
    lan | wan)
      [ "$(id -u)" -eq 0 ] || {
        echo "bench.sh: MPCACHE_BENCH_CONTEXT_PROFILE=$profile needs root (network namespaces)" >&2
        return 1
      }
      name=$name-$profile
      if [ "$profile" = lan ]; then one_way=0.0001; else one_way=0.02; fi
      where="the three parties in network namespaces of their own (deploy/netns/netns.sh,"
      where+=" profile $profile), talking over the TLS mesh; the dealers in process" ;;
    *) echo "bench.sh: MPCACHE_BENCH_CONTEXT_PROFILE must be none, lan or wan, not" \
         "'$profile'" >&2
       return 2 ;;
  esac
  local dir=$out/$name
  rm -rf "$dir"
  mkdir -p "$dir"
  local c
  local -a list=()
  for c in $contexts; do list+=("$c"); done
  # The runs in a subshell, so that its EXIT trap removes the namespaces whatever happens.
  (
    local -a mesh=()
    if [ "$profile" != none ]; then
      local prefix=mpcbench netns=$root/deploy/netns/netns.sh
      trap '"$netns" down --prefix "$prefix" >/dev/null 2>&1 || true' EXIT
      "$netns" up --prefix "$prefix" --profile "$profile" --netdelay "$bin/netdelay/mpcache-netdelay"
      ./deploy/gen-certs.sh "$dir/certs" >/dev/null 2>&1
      local i addrs="" spaces=""
      for i in 0 1 2; do
        addrs+="$("$netns" addr "party$i"):$((7300 + i)),"
        spaces+="$prefix-party$i,"
      done
      mesh=(--mesh-addresses "${addrs%,}" --mesh-certs "$dir/certs" --mesh-netns "${spaces%,}")
    fi
    run_context_points "$dir" "$dims" "$security" "${mesh[@]}"
  )
  local table=$out/$name.md
  {
    echo "Shape $dims, 1 layer, $security, $where, one run per point; $(nproc) cores," \
      "$(date -u +%Y-%m-%d)," \
      "bench.sh at $(git -C "$root" rev-parse --short HEAD), binary $bin/bench/mpcache-bench" \
      "($(date -u -r "$bin/bench/mpcache-bench" '+built %Y-%m-%d %H:%M UTC'))."
    echo "MPCache flags: ${context_mpcache_flags[*]}."
    echo
  } >"$table"
  # The tables (markdown) and the plots' data (one line per context).
  python3 - "$dir" "$one_way" "${list[@]}" >>"$table" <<'PY'
import json, sys
d, one_way, contexts = sys.argv[1], float(sys.argv[2]), [int(c) for c in sys.argv[3:]]
ATT = ("scores", "select", "softmax", "mix")
MB = 1e6
def load(cache, c):
    r = json.load(open(f"{d}/{cache}-{c}.json"))
    wall, rss = open(f"{d}/{cache}-{c}.run").read().split()
    r["wall"], r["rss"] = float(wall), int(rss) / 1048576
    ph = r["phases"]
    r["att_s"] = sum(ph[k]["seconds"] for k in ATT if k in ph)
    r["att_b"] = sum(ph[k]["bytes_per_party"] for k in ATT if k in ph)
    return r
runs = {c: (load("full", c), load("mpcache", c)) for c in contexts}
print("Whole step (s; MB the busiest party sends; rounds):")
print()
print("| context | full s | full MB | full rounds | MPCache s | MPCache MB | MPCache rounds "
      "| selected tokens (full / MPCache) | speed-up | byte ratio | peak RSS (full / MPCache) |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for c, (f, m) in runs.items():
    print(f"| {c} | {f['seconds']:.2f} | {f['bytes_per_party'] / MB:.1f} | {f['rounds']} "
          f"| {m['seconds']:.2f} | {m['bytes_per_party'] / MB:.1f} | {m['rounds']} "
          f"| {f['selected_tokens']} / {m['selected_tokens']} "
          f"| {f['seconds'] / m['seconds']:.2f}x "
          f"| {f['bytes_per_party'] / m['bytes_per_party']:.2f}x "
          f"| {f['rss']:.1f} / {m['rss']:.1f} GiB |")
if one_way > 0:
    # What the profile's delay alone costs a step: every round waits one one-way delay
    # (tools/bench/link_estimate.h), the rest is compute and the links' rate.
    print()
    print(f"The rounds' share at {one_way * 1e3:g} ms one way (rounds x delay, and its part "
          "of the step):")
    print()
    print("| context | full: rounds x delay | share | MPCache: rounds x delay | share |")
    print("|---|---|---|---|---|")
    for c, (f, m) in runs.items():
        fd, md = f["rounds"] * one_way, m["rounds"] * one_way
        print(f"| {c} | {fd:.2f} s | {100 * fd / f['seconds']:.0f}% "
              f"| {md:.2f} s | {100 * md / m['seconds']:.0f}% |")
print()
print("Attention side, the phases that grow with the context (s / MB each):")
print()
print("| context | cache | scores | select | softmax | mix | attention s | attention MB "
      "| vs full (s, bytes) |")
print("|---|---|---|---|---|---|---|---|---|")
for c, (f, m) in runs.items():
    for name, r in (("full", f), ("MPCache", m)):
        ph = r["phases"]
        def cell(k):
            if k not in ph:
                return "—"
            return f"{ph[k]['seconds']:.2f} / {ph[k]['bytes_per_party'] / MB:.2f}"
        vs = f"{f['att_s'] / m['att_s']:.1f}x, {f['att_b'] / m['att_b']:.1f}x" if r is m else ""
        print(f"| {c} | {name} | {cell('scores')} | {cell('select')} | {cell('softmax')} "
              f"| {cell('mix')} | {r['att_s']:.2f} | {r['att_b'] / MB:.2f} | {vs} |")
print()
total = sum(f["wall"] + m["wall"] for f, m in runs.values())
print(f"Wall time of the {2 * len(runs)} runs, setup included: {total / 60:.1f} min.")
with open(f"{d}/plot.dat", "w") as out:
    out.write("# context full_s full_MB mpcache_s mpcache_MB "
              "full_att_s full_att_MB mpcache_att_s mpcache_att_MB\n")
    for c, (f, m) in runs.items():
        out.write(f"{c} {f['seconds']} {f['bytes_per_party'] / MB} {m['seconds']} "
                  f"{m['bytes_per_party'] / MB} {f['att_s']} {f['att_b'] / MB} "
                  f"{m['att_s']} {m['att_b'] / MB}\n")
PY
  local xtics='' lo hi plot_where="in process"
  [ "$profile" = none ] || plot_where="$profile profile, TLS between namespaces"
  for c in "${list[@]}"; do xtics+="\"$c\" $c,"; done
  lo=$(printf '%s\n' "${list[@]}" | sort -n | head -n 1)
  hi=$(printf '%s\n' "${list[@]}" | sort -n | tail -n 1)
  gnuplot <<GP
set terminal png size 900,560 font ",11"
set logscale x 2
set xrange [$lo / 1.3 : $hi * 1.3]
set xtics (${xtics%,})
set xlabel "context (cached positions)"
set key top left Left reverse
set grid
set yrange [0:*]
set style data linespoints
set title "One decoding step, ${dims} x 1 layer, $security, $plot_where ($(nproc) cores)"
# k = 0: seconds (columns 2, 4, 6, 8), k = 1: MB (columns 3, 5, 7, 9).
do for [k=0:1] {
  set output sprintf("%s/${name}_%s.png", "$out", k == 0 ? "seconds" : "bytes")
  set ylabel (k == 0 ? "seconds" : "MB sent by the busiest party")
  plot "$dir/plot.dat" using 1:(column(2+k)) title "full cache, whole step" lw 2 pt 7, \
       "" using 1:(column(4+k)) title "MPCache, whole step" lw 2 pt 5, \
       "" using 1:(column(6+k)) title "full cache, attention (scores+select+softmax+mix)" lw 2 pt 6, \
       "" using 1:(column(8+k)) title "MPCache, attention" lw 2 pt 4
}
GP
  echo "bench.sh: the context table is in $table, the plots in $out/${name}_seconds.png" \
    "and $out/${name}_bytes.png" >&2
  cat "$table"
}
