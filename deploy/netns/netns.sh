#!/usr/bin/env bash
# A multi-host topology on one machine: one network namespace per host, each with its own
# address on a private /24, joined by veth links to a switch in a switch namespace of their
# own (a bridge, or mpcache-netdelay: below). Nothing is created in the caller's namespace;
# `down` removes everything `up` made (and `up` removes a half-made topology of the same
# prefix when it fails).
#
#   deploy/netns/netns.sh up   [--prefix P] [--subnet A.B.C] [--profile lan|wan|none]
#                              [--netdelay PATH] [--userspace-delay]
#   deploy/netns/netns.sh down [--prefix P]
#   deploy/netns/netns.sh link [--prefix P] HOST up|down      cut or restore HOST's link
#   deploy/netns/netns.sh shape [--prefix P] HOST RATE|none   rate-limit HOST's link (tbf)
#   deploy/netns/netns.sh addr [--subnet A.B.C] HOST           HOST's address
#
# Hosts and addresses (default prefix mpc, subnet 10.77.0):
#   P-party0 .1   P-party1 .2   P-party2 .3   P-dealer .4   P-client .5   (P-sw: the switch)
# Run a command on a host: `ip netns exec P-party0 mpcache-party --config ...`.
#
# Profiles: lan = 1 Gbit/s + 0.1 ms one way, wan = 100 Mbit/s + 20 ms one way, host to
# host (a ping's round trip: twice that). With sch_netem, netem on both ends of every link
# gives the rate and half the delay each (a frame crosses two links). A kernel without it
# (some VMs: "Specified qdisc kind is unknown"; or with --userspace-delay) gets the rate
# from tc tbf on both ends, and the whole one-way delay from mpcache-netdelay
# (src/tools/netdelay), a userspace switch run in P-sw in place of the bridge, which holds
# every frame for the delay; up says so on stderr. Its binary: --netdelay PATH, else
# $MPCACHE_NETDELAY, else build/release/src/tools/netdelay/mpcache-netdelay (build it:
# cmake --build build/release --target mpcache-netdelay), else mpcache-netdelay on PATH.
# Its pid and log: /run/mpcache-netns/P.pid, P.netdelay.log; down stops it, prints its
# counts on stderr and removes both. `shape` sets a link's rate alone (with netem it also
# drops that link's netem delay; mpcache-netdelay's delay stays).
# Needs root (or CAP_NET_ADMIN) and iproute2.
set -euo pipefail

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }

cmd="${1:-}"
case "$cmd" in
  "") usage >&2; exit 2 ;;
  -h|--help) usage; exit 0 ;;
esac
shift
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
prefix=mpc
subnet=10.77.0
profile=none
netdelay="$repo/build/release/src/tools/netdelay/mpcache-netdelay"
if [ -n "${MPCACHE_NETDELAY:-}" ]; then
  netdelay=$MPCACHE_NETDELAY
elif ! [ -x "$netdelay" ] && command -v mpcache-netdelay >/dev/null; then
  netdelay=$(command -v mpcache-netdelay)  # cmake --install puts it on PATH
fi
userspace_delay=0
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix="${2:?--prefix needs a name}"; shift 2 ;;
    --subnet) subnet="${2:?--subnet needs A.B.C}"; shift 2 ;;
    --profile) profile="${2:?--profile needs lan, wan or none}"; shift 2 ;;
    --netdelay) netdelay="${2:?--netdelay needs the path of mpcache-netdelay}"; shift 2 ;;
    --userspace-delay) userspace_delay=1; shift ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "netns.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
if ! [[ "$prefix" =~ ^[a-z][a-z0-9]{0,7}$ ]]; then
  echo "netns.sh: --prefix '$prefix' must be 1-8 lower-case letters or digits (interface names are short)" >&2
  exit 2
fi
if ! [[ "$subnet" =~ ^[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}$ ]]; then
  echo "netns.sh: --subnet '$subnet' must be three octets, e.g. 10.77.0" >&2
  exit 2
fi
# A profile: its rate and its one-way delay in microseconds (0: none).
case "$profile" in
  lan) profile_rate=1gbit profile_delay_us=100 ;;
  wan) profile_rate=100mbit profile_delay_us=20000 ;;
  none) profile_rate="" profile_delay_us=0 ;;
  *) profile_rate=invalid profile_delay_us=0 ;;  # an error for up (the others ignore it)
esac
hosts=(party0 party1 party2 dealer client)
state=/run/mpcache-netns
pidfile="$state/$prefix.pid"
logfile="$state/$prefix.netdelay.log"

host_index() {
  local i
  for i in "${!hosts[@]}"; do
    if [ "${hosts[$i]}" = "$1" ]; then echo $((i + 1)); return 0; fi
  done
  echo "netns.sh: unknown host '$1' (the hosts: ${hosts[*]})" >&2
  return 2
}
# Short interface names (15 characters at most): P-h<index> in the host, P-s<index> on the switch.
if_host() { local i; i=$(host_index "$1") || return 2; echo "${prefix}h$i"; }
if_switch() { local i; i=$(host_index "$1") || return 2; echo "${prefix}s$i"; }
# Fails with a clear message when the topology of this prefix is not up.
need_topology() {
  ip netns list | grep -q "^$prefix-sw\b" || {
    echo "netns.sh: no topology '$prefix' (run: netns.sh up --prefix $prefix)" >&2
    exit 1
  }
}

# True while process $1 exists and is not a zombie (an exited process nobody reaped).
alive() {
  local st
  st=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$st" ] && [ "$st" != Z ]
}
# Stops process $1 (TERM, then KILL after 3 s) if it runs in this topology's switch namespace.
stop_switch_process() {
  local pid=$1 n
  [ "$(ip netns identify "$pid" 2>/dev/null)" = "$prefix-sw" ] || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((n = 0; n < 60; n++)); do
    alive "$pid" || return 0
    sleep 0.05
  done
  kill -KILL "$pid" 2>/dev/null || true
  for ((n = 0; n < 20; n++)); do
    alive "$pid" || return 0
    sleep 0.05
  done
}
stop_netdelay() {
  local pid
  if [ -f "$pidfile" ]; then
    pid=$(cat "$pidfile" 2>/dev/null || true)
    if [[ "$pid" =~ ^[0-9]+$ ]]; then stop_switch_process "$pid"; fi
    rm -f "$pidfile"
  fi
  # One whose pidfile was lost: the switch namespace runs nothing else of ours.
  for pid in $(ip netns pids "$prefix-sw" 2>/dev/null); do
    if tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -q 'mpcache-netdelay'; then
      stop_switch_process "$pid"
    fi
  done
  if [ -f "$logfile" ]; then  # its counts, then nothing is left
    sed -n 's/^mpcache-netdelay: stopped/netns.sh: mpcache-netdelay stopped/p' "$logfile" >&2
    rm -f "$logfile"
  fi
  rmdir "$state" 2>/dev/null || true
}

down() {
  local h
  stop_netdelay  # first: it keeps the switch namespace's links alive
  for h in "${hosts[@]}" sw; do
    ip netns del "$prefix-$h" 2>/dev/null || true
  done
}

# shape HOST RATE [NETEM_DELAY]: both ends of HOST's link. With NETEM_DELAY (e.g. 10000us)
# each end gets netem with that delay and the rate; without it, tbf with the rate.
shape() {
  local h=$1 rate=$2 delay=${3:-}
  local ih is
  ih=$(if_host "$h") || exit 2
  is=$(if_switch "$h") || exit 2
  need_topology
  tc -n "$prefix-$h" qdisc del dev "$ih" root 2>/dev/null || true
  tc -n "$prefix-sw" qdisc del dev "$is" root 2>/dev/null || true
  [ "$rate" = "none" ] && return 0
  if [ -n "$delay" ]; then
    tc -n "$prefix-$h" qdisc add dev "$ih" root netem delay "$delay" rate "$rate"
    tc -n "$prefix-sw" qdisc add dev "$is" root netem delay "$delay" rate "$rate"
    return 0
  fi
  tc -n "$prefix-$h" qdisc add dev "$ih" root tbf rate "$rate" burst 256kb latency 500ms
  tc -n "$prefix-sw" qdisc add dev "$is" root tbf rate "$rate" burst 256kb latency 500ms
}

# True when tc netem works here (tried on the switch namespace's loopback).
have_netem() {
  tc -n "$prefix-sw" qdisc add dev lo root netem delay 1ms 2>/dev/null || return 1
  tc -n "$prefix-sw" qdisc del dev lo root 2>/dev/null || true
}

# start_netdelay DELAY_US: mpcache-netdelay switches between every switch-side port, detached
# (its own session), and up waits until it says it is ready.
start_netdelay() {
  local us=$1 h pid n
  local ports=()
  for h in "${hosts[@]}"; do ports+=(--port "$(if_switch "$h")"); done
  mkdir -p "$state"
  rm -f "$pidfile" "$logfile"
  # setsid and ip netns exec both exec (no fork here): $! is mpcache-netdelay itself.
  setsid ip netns exec "$prefix-sw" "$netdelay" --delay-us "$us" "${ports[@]}" \
    </dev/null >/dev/null 2>"$logfile" &
  pid=$!
  echo "$pid" >"$pidfile"
  for ((n = 0; n < 100; n++)); do
    if grep -q '^mpcache-netdelay: ready' "$logfile" 2>/dev/null; then return 0; fi
    alive "$pid" || break
    sleep 0.05
  done
  echo "netns.sh: mpcache-netdelay did not start (log $logfile):" >&2
  cat "$logfile" >&2 || true
  return 1
}

up() {
  if [ "$profile_rate" = invalid ]; then
    echo "netns.sh: unknown --profile '$profile' (lan, wan or none)" >&2
    exit 2
  fi
  down
  trap 'down' EXIT  # a failure half-way (set -e) removes what was made
  ip netns add "$prefix-sw"
  local delay_mode=none
  if [ "$profile_delay_us" -gt 0 ]; then
    if [ "$userspace_delay" = 0 ] && have_netem; then
      delay_mode=netem
    else
      delay_mode=netdelay
      if ! [ -x "$netdelay" ]; then
        echo "netns.sh: no mpcache-netdelay at '$netdelay': the --profile $profile delay needs it" \
          "(this kernel has no tc netem). Build it: cmake --build build/release --target" \
          "mpcache-netdelay, or give --netdelay PATH (or MPCACHE_NETDELAY)" >&2
        exit 1
      fi
    fi
  fi
  if [ "$delay_mode" != netdelay ]; then
    ip -n "$prefix-sw" link add br0 type bridge
    ip -n "$prefix-sw" link set br0 up
  fi
  local h i ih is
  for h in "${hosts[@]}"; do
    i=$(host_index "$h")
    ih=$(if_host "$h")
    is=$(if_switch "$h")
    ip netns add "$prefix-$h"
    ip -n "$prefix-$h" link set lo up
    ip -n "$prefix-$h" link add "$ih" type veth peer name "$is" netns "$prefix-sw"
    ip -n "$prefix-$h" addr add "$subnet.$i/24" dev "$ih"
    ip -n "$prefix-$h" link set "$ih" up
    if [ "$delay_mode" != netdelay ]; then ip -n "$prefix-sw" link set "$is" master br0; fi
    ip -n "$prefix-sw" link set "$is" up
  done
  if [ -n "$profile_rate" ]; then
    for h in "${hosts[@]}"; do
      if [ "$delay_mode" = netem ]; then
        shape "$h" "$profile_rate" "$((profile_delay_us / 2))us"
      else
        shape "$h" "$profile_rate"
      fi
    done
  fi
  if [ "$delay_mode" = netdelay ]; then
    start_netdelay "$profile_delay_us"
    local why="this kernel has no tc netem"
    [ "$userspace_delay" = 1 ] && why="--userspace-delay"
    echo "netns.sh: $why: the $profile delay ($profile_delay_us us one way) is userspace" \
      "(mpcache-netdelay in $prefix-sw, pid $(cat "$pidfile"), log $logfile); the rate is tc tbf" >&2
  fi
  trap - EXIT
}

case "$cmd" in
  up) up ;;
  down) down ;;
  link)
    [ ${#args[@]} -eq 2 ] && [[ "${args[1]}" =~ ^(up|down)$ ]] || {
      echo "netns.sh link: give HOST up|down" >&2; exit 2; }
    ih=$(if_host "${args[0]}") || exit 2
    need_topology
    ip -n "$prefix-${args[0]}" link set "$ih" "${args[1]}" ;;
  shape)
    [ ${#args[@]} -eq 2 ] || { echo "netns.sh shape: give HOST RATE (e.g. 20mbit) or none" >&2; exit 2; }
    shape "${args[0]}" "${args[1]}" ;;
  addr)
    [ ${#args[@]} -eq 1 ] || { echo "netns.sh addr: give HOST" >&2; exit 2; }
    i=$(host_index "${args[0]}") || exit 2
    echo "$subnet.$i" ;;
  *) echo "netns.sh: unknown command '$cmd' (up, down, link, shape, addr)" >&2; exit 2 ;;
esac
