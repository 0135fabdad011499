#!/usr/bin/env bash
# The containers end to end: builds the image from docker/Dockerfile, starts the dealer and
# three parties as four containers from deploy/compose.yaml (each with its own YAML from
# deploy/config/ and its own certificate), runs the client on this host against the
# published ports, and removes everything it created (containers, networks, the image,
# certificates). Sets the host up first (scripts/container-host.sh: podman from Debian
# packages when there is no Docker engine).
#
#   scripts/container-test.sh            up, one 64-step generation of "Once upon a time"
#                                        (the text on stdout), down
#   scripts/container-test.sh up DIR     up only; DIR receives client.yaml, certs/ and the
#                                        names of what was created (for `down`)
#   scripts/container-test.sh down DIR   stop and remove what `up DIR` created
#
#   MPCACHE_MODEL_DIR      folder with stories260K.bin and tok512.bin (default ../shared/models)
#   MPCACHE_BUILD_DIR      where the host's mpcache-client is built (default build/release)
#   MPCACHE_KEEP_IMAGE=1   keep the image (a re-run then builds from the layer cache)
#
# The automated test is `ctest --test-dir build/release -L containers` (e2e_container_test:
# the same up/down around a client run checked against the golden text). The parties
# publish 127.0.0.1:7110-7112 (client) and 9100-9102 (health), as deploy/compose.yaml says.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

log() { echo "container-test: $*" >&2; }
usage() { sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; }

cmd=${1:-run}
case "$cmd" in
  -h | --help) usage; exit 0 ;;
  run | up | down) ;;
  *) echo "container-test.sh: unknown command '$cmd' (run, up DIR, down DIR; see --help)" >&2; exit 2 ;;
esac
state=${2:-}
if [[ "$cmd" != run && -z "$state" ]]; then
  echo "container-test.sh $cmd: give the state folder (container-test.sh $cmd DIR)" >&2
  exit 2
fi

compose_cmd() {  # ENGINE -> the compose command for it
  if [[ "$1" = docker ]]; then echo "docker compose"; else echo "podman-compose"; fi
}

# Everything `down` needs is in $state/created (sourced): engine, project, image.
down() {
  local dir=$1
  [[ -f "$dir/created" ]] || { log "nothing recorded in $dir/created; nothing to remove"; return 0; }
  local engine project image
  # shellcheck disable=SC1091
  . "$dir/created"
  local compose
  compose=$(compose_cmd "$engine")
  log "stopping and removing project $project"
  MPCACHE_IMAGE=$image MPCACHE_CERT_DIR=$dir/certs MPCACHE_MODEL_DIR=${MPCACHE_MODEL_DIR:-/nonexistent} \
    $compose -p "$project" -f deploy/compose.yaml down >"$dir/down.log" 2>&1 || true
  # Whatever compose left (a container that refused to stop, a network still in use).
  local ids
  ids=$($engine ps -aq --filter "label=com.docker.compose.project=$project" 2>/dev/null || true)
  [[ -z "$ids" ]] || $engine rm -f $ids >/dev/null 2>&1 || true
  local net
  for net in mesh prep-0 prep-1 prep-2 front; do
    $engine network rm -f "${project}_$net" >/dev/null 2>&1 || true
  done
  if [[ "${MPCACHE_KEEP_IMAGE:-0}" != 1 ]]; then
    $engine rmi -f "$image" "$image-build" >/dev/null 2>&1 || true
  fi
  rm -rf "$dir/certs" "$dir/created"
}

up() {
  local dir=$1
  mkdir -p "$dir"
  . "$root/scripts/model-dir.sh"
  resolve_model_dir container-test.sh "$root"
  local f
  for f in stories260K.bin tok512.bin; do
    [[ -f "$MPCACHE_MODEL_DIR/$f" ]] || { log "missing $MPCACHE_MODEL_DIR/$f"; return 1; }
  done
  local t0 engine
  t0=$(date +%s)
  engine=$(./scripts/container-host.sh --engine)
  local project="mpcachetest$$"
  local image="localhost/mpcache-test:$$"
  printf 'engine=%s\nproject=%s\nimage=%s\n' "$engine" "$project" "$image" >"$dir/created"

  log "building $image with $engine (docker/Dockerfile)"
  local b0
  b0=$(date +%s)
  # podman writes OCI images by default, which have no HEALTHCHECK: ask for docker's format.
  local format=()
  [[ "$engine" = podman ]] && format=(--format docker)
  # The build stage under a tag of its own, so that `down` removes it too (otherwise it
  # stays behind as an unnamed 1 GB image); the second build takes it from the cache.
  if ! $engine build "${format[@]}" -f docker/Dockerfile --target build -t "$image-build" . \
    >"$dir/build.log" 2>&1 ||
    ! $engine build "${format[@]}" -f docker/Dockerfile -t "$image" . >>"$dir/build.log" 2>&1; then
    tail -n 30 "$dir/build.log" >&2
    log "image build failed (log: $dir/build.log)"
    return 1
  fi
  log "image built in $(($(date +%s) - b0)) s"

  # Daemons' keys to the containers' uid (10001), still 0600; the client key stays ours.
  ./deploy/gen-certs.sh --owner 10001 "$dir/certs" >/dev/null 2>&1
  cat >"$dir/client.yaml" <<EOF
network:
  parties: [127.0.0.1:7110, 127.0.0.1:7111, 127.0.0.1:7112]
tls:
  cert: $dir/certs/client.crt
  key: $dir/certs/client.key
  ca: $dir/certs/ca.crt
model:
  tokenizer: $MPCACHE_MODEL_DIR/tok512.bin
EOF
  local compose
  compose=$(compose_cmd "$engine")
  log "starting dealer, party0, party1, party2 ($compose -p $project)"
  if ! MPCACHE_IMAGE=$image MPCACHE_CERT_DIR=$dir/certs MPCACHE_MODEL_DIR=$MPCACHE_MODEL_DIR \
    $compose -p "$project" -f deploy/compose.yaml up -d >"$dir/up.log" 2>&1; then
    tail -n 30 "$dir/up.log" >&2
    log "compose up failed (log: $dir/up.log)"
    return 1
  fi
  local port deadline
  deadline=$(($(date +%s) + 120))
  for port in 9100 9101 9102; do
    until curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1; do
      if [[ $(date +%s) -gt $deadline ]]; then
        log "party health endpoint 127.0.0.1:$port did not answer within 120 s; the logs:"
        local c
        for c in dealer party0 party1 party2; do
          echo "--- $c" >&2
          $engine logs --tail 20 "${project}_${c}_1" >&2 2>&1 || true
        done
        return 1
      fi
      sleep 0.5
    done
  done
  log "four containers up and healthy in $(($(date +%s) - t0)) s (client config: $dir/client.yaml)"
}

if [[ "$cmd" = up ]]; then up "$state"; exit; fi
if [[ "$cmd" = down ]]; then down "$state"; exit; fi

# run: up, one generation with the host's client, down (also on failure or Ctrl-C).
build=${MPCACHE_BUILD_DIR:-build/release}
client="$build/src/tools/client/mpcache-client"
if [[ ! -x "$client" ]]; then
  ./scripts/install-deps.sh
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" -j"$(nproc)" --target mpcache-client >/dev/null
fi
state=$(mktemp -d "${TMPDIR:-/tmp}/mpcache-containers.XXXXXX")
t0=$(date +%s)
finish() {
  local rc=$?
  trap - EXIT INT TERM
  down "$state" || true
  rm -rf "$state"
  log "done in $(($(date +%s) - t0)) s (exit $rc)"
  exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT TERM
up "$state"
"$client" generate --config "$state/client.yaml" --prompt "Once upon a time" --max-tokens 64
