#!/usr/bin/env bash
# One private generation across a multi-host topology on this machine: the dealer and the
# three parties each in a network namespace of their own with their own address, the
# client in a fifth (deploy/netns/netns.sh), every link shaped by a profile. Prints the
# text on stdout and the client's figures (seconds/token, bytes/token, rounds/token) on
# stderr, then removes everything it made (processes, namespaces, certificates), also on
# failure or Ctrl-C.
#
#   deploy/netns/demo.sh [--profile lan|wan|none] [--steps N] [--prompt P] [--json]
#                        [--prefix P]   (namespaces P-party0 ..; default mpcdemo)
#
#   MPCACHE_MODEL_DIR   folder with stories260K.bin and tok512.bin (default ../shared/models)
#   MPCACHE_BUILD_DIR   the build with the daemons and the client (default build/release)
# Needs root (network namespaces). Configs are config/*.yaml with the loopback addresses
# replaced by the namespaces' (party i: 10.77.0.<i+1>, dealer .4, client .5) and the
# request timeouts raised to an hour (a 64-step story takes ~35 min under `wan`).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"

profile=lan
steps=64
prompt="Once upon a time"
prefix=mpcdemo
json=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --profile) profile=${2:?--profile needs lan, wan or none}; shift 2 ;;
    --steps) steps=${2:?--steps needs a number}; shift 2 ;;
    --prompt) prompt=${2:?--prompt needs text}; shift 2 ;;
    --json) json=(--json); shift ;;
    --prefix) prefix=${2:?--prefix needs a name}; shift 2 ;;
    -h | --help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "demo.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case "$profile" in lan | wan | none) ;; *)
  echo "demo.sh: --profile '$profile' must be lan, wan or none" >&2; exit 2 ;;
esac
[[ "$steps" =~ ^[0-9]+$ ]] || { echo "demo.sh: --steps '$steps' must be a number" >&2; exit 2; }
[[ "$(id -u)" -eq 0 ]] || { echo "demo.sh: needs root (ip netns)" >&2; exit 1; }

. "$root/scripts/model-dir.sh"
resolve_model_dir netns/demo.sh "$root"
build=${MPCACHE_BUILD_DIR:-build/release}
bin="$build/src/tools"
for b in party/mpcache-party dealer/mpcache-dealer client/mpcache-client; do
  [[ -x "$bin/$b" ]] || {
    echo "demo.sh: no $bin/$b (build first: cmake --build $build --target mpcache-party mpcache-dealer mpcache-client)" >&2
    exit 1
  }
done
bin=$(cd "$bin" && pwd)

netns=deploy/netns/netns.sh
work=$(mktemp -d "${TMPDIR:-/tmp}/mpcache-netns-demo.XXXXXX")
. "$root/scripts/daemons.sh"
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  daemons_stop
  "$netns" down --prefix "$prefix" || true
  if [[ $rc -ne 0 ]]; then
    echo "demo.sh: logs kept in $work" >&2
  else
    rm -rf "$work"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$netns" up --prefix "$prefix" --profile "$profile"
addr() { "$netns" addr "$1"; }
p0=$(addr party0) p1=$(addr party1) p2=$(addr party2) dealer=$(addr dealer)
./deploy/gen-certs.sh "$work/certs" >/dev/null 2>&1

# config/*.yaml with the namespaces' addresses, absolute certificate paths, long timeouts.
rewrite() {  # SRC DST
  sed -e "s/127\.0\.0\.1:7100/$p0:7100/; s/127\.0\.0\.1:7101/$p1:7101/; s/127\.0\.0\.1:7102/$p2:7102/" \
    -e "s/127\.0\.0\.1:7200/$dealer:7200/" \
    -e "s/127\.0\.0\.1:7110/$p0:7110/; s/127\.0\.0\.1:7111/$p1:7111/; s/127\.0\.0\.1:7112/$p2:7112/" \
    -e "s|\.\./build/certs/|$work/certs/|" \
    -e "s/request_ms: [0-9]*/request_ms: 3600000/" \
    -e "s|\${MPCACHE_MODEL_DIR:-[^}]*}|$MPCACHE_MODEL_DIR|" "$1" >"$2"
}
for f in party0 party1 party2 dealer client; do rewrite "config/$f.yaml" "$work/$f.yaml"; done

start() {  # HOST BINARY CONFIG
  daemon_start netns/demo.sh "$1" "$work/$1.log" ip netns exec "$prefix-$1" "$2" --config "$3"
}
echo "demo.sh: dealer at $dealer, parties at $p0 $p1 $p2, client at $(addr client); profile $profile" >&2
start dealer "$bin/dealer/mpcache-dealer" "$work/dealer.yaml"
for i in 0 1 2; do start "party$i" "$bin/party/mpcache-party" "$work/party$i.yaml"; done
ip netns exec "$prefix-client" "$bin/client/mpcache-client" generate --config "$work/client.yaml" \
  --prompt "$prompt" --max-tokens "$steps" "${json[@]}"
