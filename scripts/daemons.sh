# shellcheck shell=bash
# Sourced by scripts/demo.sh and deploy/netns/demo.sh: daemons started in the background,
# each waited for until its log says "ready", and all stopped together.
#   daemon_start CALLER NAME LOG CMD...  runs CMD with stderr to LOG; returns once LOG says
#                                        "ready" (30 s at most), else prints LOG's tail, fails
#   daemons_stop                         SIGTERM to every daemon started, SIGKILL to those
#                                        still running 10 s later, and reaps them
daemon_pids=()

daemon_start() {
  local caller=$1 name=$2 log=$3
  shift 3
  "$@" 2>"$log" &
  daemon_pids+=($!)
  for _ in $(seq 1 300); do
    grep -q "ready" "$log" 2>/dev/null && return 0
    if ! kill -0 "${daemon_pids[-1]}" 2>/dev/null && ! grep -q "ready" "$log"; then break; fi
    sleep 0.1
  done
  echo "$caller: $name did not start:" >&2
  tail -n 5 "$log" >&2
  return 1
}

daemons_stop() {
  local pid alive
  for pid in "${daemon_pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for _ in $(seq 1 100); do
    alive=0
    for pid in "${daemon_pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && break
    sleep 0.1
  done
  for pid in "${daemon_pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  for pid in "${daemon_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
