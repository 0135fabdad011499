#!/usr/bin/env bash
# scripts/bench.sh context with MPCACHE_BENCH_CONTEXT_PROFILE=lan (SPEC §10's LAN profile, issue
# 16): the parties in three network namespaces of deploy/netns/netns.sh, talking over the TLS
# mesh; a tiny shape and one context. Checks the table names the profile and has its rows,
# that both caches' steps ran between the namespaces (mesh_bytes_sent in every JSON), and
# that nothing is left behind (the section removes its namespaces).
#
#   bench_context_netns_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 build=$2
[[ "$(id -u)" -eq 0 ]] || { echo "SKIP: needs root (ip netns)"; exit 0; }
out=$(mktemp -d "${TMPDIR:-/tmp}/mpcache-bench-context-lan.XXXXXX")
trap 'rm -rf "$out"; "$src/deploy/netns/netns.sh" down --prefix mpcbench >/dev/null 2>&1 || true' EXIT
MPCACHE_BENCH_DIR=$out MPCACHE_BENCH_BUILD=0 MPCACHE_BUILD_DIR=$build \
  MPCACHE_BENCH_CONTEXT_DIMS=64x1x4 MPCACHE_BENCH_CONTEXTS=40 MPCACHE_BENCH_CONTEXT_PROFILE=lan \
  "$src/scripts/bench.sh" context >"$out/stdout" 2>"$out/stderr" || {
  echo "FAIL: bench.sh context exited $?"; cat "$out/stderr"; exit 1; }
table=$out/context-lan.md
grep -q "network namespaces of their own (deploy/netns/netns.sh, profile lan)" "$table" ||
  { echo "FAIL: the table does not name the profile"; cat "$table"; exit 1; }
grep -Eq '^\| 40 \| [0-9.]+ \| [0-9.]+ \| [0-9]+ \| ' "$table" ||
  { echo "FAIL: no row for context 40"; cat "$table"; exit 1; }
grep -Eq '^\| 40 \| [0-9.]+ s \| [0-9]+% \| [0-9.]+ s \| [0-9]+% \|$' "$table" ||
  { echo "FAIL: no rounds' share row"; cat "$table"; exit 1; }
for cache in full mpcache; do
  python3 - "$out/context-lan/$cache-40.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert "in network namespaces mpcbench-party0,mpcbench-party1,mpcbench-party2" in r["mesh"], r["mesh"]
assert min(r["mesh_bytes_sent"]) > 0, r["mesh_bytes_sent"]
PY
done
[[ -s "$out/context-lan_seconds.png" && -s "$out/context-lan_bytes.png" ]] ||
  { echo "FAIL: no plots"; exit 1; }
if ip netns list | grep -q '^mpcbench-'; then
  echo "FAIL: namespaces left behind: $(ip netns list | grep '^mpcbench-' | tr '\n' ' ')"
  exit 1
fi
echo "ok: $(sed -n '/^| 40 |/{p;q}' "$table")"
