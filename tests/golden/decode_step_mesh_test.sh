#!/usr/bin/env bash
# `mpcache-bench decode-step --mesh-addresses` (issue 16, SPEC §10's LAN/WAN sweep): the same
# step over the parties' real TLS mesh on loopback as over the in-memory mesh — the same
# token (the plaintext twin's), the same bytes and rounds in every phase — with the TLS
# meshes having carried the traffic; and the mistakes a user makes with the mesh flags named.
#
#   decode_step_mesh_test.sh MPCACHE_BENCH MODEL GEN_CERTS SECURITY
set -euo pipefail
bench=$1 model=$2 gen_certs=$3 security=$4
work=$(mktemp -d "${TMPDIR:-/tmp}/mpcache-step-mesh.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$gen_certs" "$work/certs" >/dev/null 2>&1
step=(decode-step --model "$model" --context 40 --kv-block 16 --security "$security" --json)
"$bench" "${step[@]}" >"$work/memory.json"
"$bench" "${step[@]}" --mesh-addresses 127.0.0.1:0,127.0.0.1:0,127.0.0.1:0 \
  --mesh-certs "$work/certs" >"$work/tls.json"
python3 - "$work/memory.json" "$work/tls.json" <<'PY'
import json, sys
mem, tls = (json.load(open(p)) for p in sys.argv[1:3])
def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)
if mem["mesh"] != "in-memory" or "mesh_bytes_sent" in mem:
    fail(f"the default run says mesh {mem['mesh']!r}")
if not tls["mesh"].startswith("TLS 1.3 between 127.0.0.1:0"):
    fail(f"the TLS run says mesh {tls['mesh']!r}")
for r in (mem, tls):
    if not r["agrees_with_plaintext"]:
        fail(f"{r['mesh']}: token {r['token']} is not the plaintext twin's {r['plain_token']}")
for key in ("token", "bytes_per_party", "rounds", "selected_tokens"):
    if mem[key] != tls[key]:
        fail(f"{key}: in-memory {mem[key]} against TLS {tls[key]}")
for name, p in mem["phases"].items():
    q = tls["phases"].get(name)
    if q is None or (p["bytes_per_party"], p["rounds"]) != (q["bytes_per_party"], q["rounds"]):
        fail(f"phase {name}: in-memory {p} against TLS {q}")
sent = tls["mesh_bytes_sent"]
# The step resets the parties' counters at its start: the meshes count the step (and the few
# bytes exchanged after its phases were read).
if len(sent) != 3 or min(sent) < tls["bytes_per_party"] // 2 or max(sent) < tls["bytes_per_party"]:
    fail(f"the TLS meshes carried {sent} bytes for a step of {tls['bytes_per_party']} per party")
print(f"ok: token {tls['token']}, {tls['bytes_per_party']} bytes and {tls['rounds']} rounds over "
      f"both meshes; the TLS meshes sent {sent} bytes")
PY
# A namespace that does not exist: one clear error, exit 1, no hang.
set +e
out=$("$bench" "${step[@]}" --mesh-addresses 127.0.0.1:0,127.0.0.1:0,127.0.0.1:0 \
  --mesh-certs "$work/certs" --mesh-netns mpcache-no-such-ns0,mpcache-no-such-ns1,mpcache-no-such-ns2 2>&1)
rc=$?
set -e
if [[ $rc -ne 1 || "$out" != *"no network namespace 'mpcache-no-such-ns0'"*"netns.sh up"* ]]; then
  echo "FAIL: a missing namespace gave rc=$rc: $out"
  exit 1
fi
echo "ok: a missing namespace is named: $out"
