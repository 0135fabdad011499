# shellcheck shell=bash disable=SC2154  # $bin, $out, $root, $mpspdz_anchors: set by bench.sh
# The mpspdz section of scripts/bench.sh (sourced by it: uses its variables and its
# mpspdz_missing / mpspdz_how, and is not run on its own).
# Per op against MP-SPDZ (issue 16): the anchors' bench.sh (MP-SPDZ online only, fake
# preprocessing, -R 64 -Y, spdz2k and semi2k; replicated-ring for reference) run
# MPCACHE_BENCH_MPSPDZ_RUNS times, then mpcache-bench ops for the same ops, three runs each
# (products: one process, --repeat 3), malicious against spdz2k and semi-honest against semi2k.
section_mpspdz() {
  local why
  why=$(mpspdz_missing)
  if [ -n "$why" ]; then
    echo "bench.sh: skipping the mpspdz section: $why. $mpspdz_how" >&2
    return 0
  fi
  local src runs=${MPCACHE_BENCH_MPSPDZ_RUNS:-3} dir=$out/mpspdz cmp_bits=31 i k security
  local mpspdz_round_cost=64
  src=$(cd "$MPCACHE_MPSPDZ_SRC" && pwd)
  rm -rf "$dir"
  mkdir -p "$dir"
  # In a container (the anchors' bench.sh), or in the same environment as a chroot where no
  # container engine runs (scripts/mpspdz-chroot.sh; made here the first time).
  local mpspdz_run=("$mpspdz_anchors/bench.sh" "$src")
  if [ -n "${MPCACHE_MPSPDZ_CHROOT:-}" ]; then
    local shared  # the folder holding anchors/mpspdz
    shared=$(dirname "$(dirname "$mpspdz_anchors")")
    MPCACHE_SHARED=$shared "$root/scripts/mpspdz-chroot.sh" make "$MPCACHE_MPSPDZ_CHROOT"
    mpspdz_run=(env MPCACHE_SHARED="$shared"
      "$root/scripts/mpspdz-chroot.sh" run "$MPCACHE_MPSPDZ_CHROOT" "$src")
  fi
  for i in $(seq 1 "$runs"); do
    echo "bench.sh: mpspdz: MP-SPDZ run $i of $runs (the first may build the image and" \
      "MP-SPDZ and its fake preprocessing: ~17 min on 2 cores) ..." >&2
    "${mpspdz_run[@]}" >"$dir/mpspdz-$i.txt"
  done
  local b=$bin/bench/mpcache-bench load
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  for security in malicious semi-honest; do
    echo "bench.sh: mpspdz: ours, $security ..." >&2
    "$b" ops --op mul --n 1000000 --security "$security" --repeat 3 --json \
      >"$dir/mul-$security.json"
    # lt and softmax: one measured run per process (after a warm-up run), three processes.
    for k in 1 2 3; do
      "$b" ops --op lt --n 100000 --bits "$cmp_bits" --security "$security" --json \
        >"$dir/lt-$cmp_bits-$security-$k.json"
      "$b" ops --op softmax --n 1024 --bits "$cmp_bits" --security "$security" --json \
        >"$dir/softmax-$cmp_bits-$security-$k.json"
      # The row max's groups chosen for a round that costs what one costs here (the mesh's
      # ~50 us over ~0.2-3 us per comparison), not the default's 40 ms WAN round trip.
      "$b" ops --op softmax --n 1024 --bits "$cmp_bits" --security "$security" \
        --rank-round-cost "$mpspdz_round_cost" --json \
        >"$dir/softmax_rc$mpspdz_round_cost-$cmp_bits-$security-$k.json"
      "$b" ops --op lt --n 100000 --security "$security" --json >"$dir/lt-default-$security-$k.json"
      "$b" ops --op softmax --n 1024 --security "$security" --json \
        >"$dir/softmax-default-$security-$k.json"
    done
  done
  local table=$out/mpspdz.md where="a container"
  [ -z "${MPCACHE_MPSPDZ_CHROOT:-}" ] || where="the chroot $MPCACHE_MPSPDZ_CHROOT"
  {
    echo "$(nproc) cores ($(lscpu | sed -n 's/^Model name: *//p' | head -n 1))," \
      "$(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), $(date -u +%Y-%m-%d);" \
      "bench.sh at $(git -C "$root" rev-parse --short HEAD), binary $b" \
      "($(date -u -r "$b" '+built %Y-%m-%d %H:%M UTC')); MP-SPDZ" \
      "$(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo "(not a git tree)") at" \
      "$src (in $where)," \
      "the programs of $mpspdz_anchors; load average before ours: $load."
    echo
    python3 "$root/scripts/mpspdz-table.py" "$dir" "$cmp_bits" "$mpspdz_round_cost"
  } >"$table"
  echo "bench.sh: the MP-SPDZ table is in $table" >&2
  cat "$table"
}
