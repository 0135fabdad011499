#!/usr/bin/env bash
# A multi-host topology on one machine: one network namespace per host, each with its own
# address on a private /24, joined by veth links to a bridge in a switch namespace of their
# own. Nothing is created in the caller's namespace; `down` removes everything `up` made
# (and `up` removes a half-made topology of the same prefix when it fails).
#
#   deploy/netns/netns.sh up   [--prefix P] [--subnet A.B.C] [--profile lan|wan|none]
#   deploy/netns/netns.sh down [--prefix P]
#   deploy/netns/netns.sh link [--prefix P] HOST up|down      cut or restore HOST's link
#   deploy/netns/netns.sh shape [--prefix P] HOST RATE|none   rate-limit HOST's link (tbf)
#   deploy/netns/netns.sh addr [--subnet A.B.C] HOST           HOST's address
#
# Hosts and addresses (default prefix mpc, subnet 10.77.0):
#   P-party0 .1   P-party1 .2   P-party2 .3   P-dealer .4   P-client .5   (P-sw: the bridge)
# Run a command on a host: `ip netns exec P-party0 mpcache-party --config ...`.
#
# Profiles: lan = 1 Gbit/s + 0.1 ms one way, wan = 100 Mbit/s + 20 ms one way, on every
# host's link (tc netem). A kernel without sch_netem (some VMs: "Specified qdisc kind is
# unknown") cannot delay: the profile then applies the rate alone (tc tbf) and says so on
# stderr. Needs root (or CAP_NET_ADMIN) and iproute2.
set -euo pipefail

usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; }

cmd="${1:-}"
case "$cmd" in
  "") usage >&2; exit 2 ;;
  -h|--help) usage; exit 0 ;;
esac
shift
prefix=mpc
subnet=10.77.0
profile=none
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix="${2:?--prefix needs a name}"; shift 2 ;;
    --subnet) subnet="${2:?--subnet needs A.B.C}"; shift 2 ;;
    --profile) profile="${2:?--profile needs lan, wan or none}"; shift 2 ;;
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
hosts=(party0 party1 party2 dealer client)

host_index() {
  local i
  for i in "${!hosts[@]}"; do
    if [ "${hosts[$i]}" = "$1" ]; then echo $((i + 1)); return 0; fi
  done
  echo "netns.sh: unknown host '$1' (the hosts: ${hosts[*]})" >&2
  return 2
}
# Short interface names (15 characters at most): P-h<index> in the host, P-s<index> on the bridge.
if_host() { local i; i=$(host_index "$1") || return 2; echo "${prefix}h$i"; }
if_switch() { local i; i=$(host_index "$1") || return 2; echo "${prefix}s$i"; }
# Fails with a clear message when the topology of this prefix is not up.
need_topology() {
  ip netns list | grep -q "^$prefix-sw\b" || {
    echo "netns.sh: no topology '$prefix' (run: netns.sh up --prefix $prefix)" >&2
    exit 1
  }
}

down() {
  local h
  for h in "${hosts[@]}" sw; do
    ip netns del "$prefix-$h" 2>/dev/null || true
  done
}

shape() {  # shape HOST RATE [DELAY]: both ends of HOST's link
  local h=$1 rate=$2 delay=${3:-}
  local ih is
  ih=$(if_host "$h") || exit 2
  is=$(if_switch "$h") || exit 2
  need_topology
  tc -n "$prefix-$h" qdisc del dev "$ih" root 2>/dev/null || true
  tc -n "$prefix-sw" qdisc del dev "$is" root 2>/dev/null || true
  [ "$rate" = "none" ] && return 0
  if [ -n "$delay" ]; then
    if tc -n "$prefix-$h" qdisc add dev "$ih" root netem delay "$delay" rate "$rate" 2>/dev/null; then
      tc -n "$prefix-sw" qdisc add dev "$is" root netem delay "$delay" rate "$rate"
      return 0
    fi
    echo "netns.sh: this kernel has no tc netem: $h's link gets the rate $rate but no delay" >&2
  fi
  tc -n "$prefix-$h" qdisc add dev "$ih" root tbf rate "$rate" burst 256kb latency 500ms
  tc -n "$prefix-sw" qdisc add dev "$is" root tbf rate "$rate" burst 256kb latency 500ms
}

up() {
  down
  trap 'down' ERR
  ip netns add "$prefix-sw"
  ip -n "$prefix-sw" link add br0 type bridge
  ip -n "$prefix-sw" link set br0 up
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
    ip -n "$prefix-sw" link set "$is" master br0
    ip -n "$prefix-sw" link set "$is" up
  done
  for h in "${hosts[@]}"; do
    case "$profile" in
      lan) shape "$h" 1gbit 0.1ms ;;
      wan) shape "$h" 100mbit 20ms ;;
      none) ;;
      *) echo "netns.sh: unknown --profile '$profile' (lan, wan or none)" >&2; down; exit 2 ;;
    esac
  done
  trap - ERR
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
