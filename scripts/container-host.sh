#!/usr/bin/env bash
# Makes this machine a container host from Debian packages only, for people (and tests)
# without a Docker engine. Idempotent: a second run changes nothing.
#
#   scripts/container-host.sh            set up (or check) the host
#   scripts/container-host.sh --engine   print the engine to use (docker or podman)
#
# With a working Docker engine (`docker info` answers) nothing is installed: the same
# docker/Dockerfile and deploy/compose.yaml run unchanged under `docker compose`.
# Otherwise it installs podman, runc, podman-compose and debootstrap, and writes
# /etc/containers/containers.conf for hosts like this one (runc, because crun refuses
# hybrid cgroups; cgroupfs, because there is no systemd; no default ulimits, because
# setting rlimits is not permitted in every sandbox; netavark, whose DNS serves the
# compose file's internal networks). No image registry needs to be
# reachable: the base images debian:12 and debian:12-slim are made locally with
# debootstrap from the Debian mirror apt already uses and imported into podman.
set -euo pipefail

print_engine=0
for arg in "$@"; do
  case "$arg" in
    --engine) print_engine=1 ;;
    -h | --help)
      sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "container-host.sh: unknown option '$arg' (the options: --engine, --help)" >&2
      exit 2
      ;;
  esac
done

log() { echo "container-host: $*" >&2; }

if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
  if [[ $print_engine -eq 1 ]]; then echo docker; fi
  log "a Docker engine answers; nothing to set up (use docker build / docker compose)"
  exit 0
fi

SUDO=""
if [[ "$(id -u)" -ne 0 ]]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    log "need root (or sudo) to install podman and make the base image"
    exit 1
  fi
fi

# netavark + aardvark-dns: the containers find each other by service name, also on
# `internal: true` networks (podman's CNI backend with dnsname refuses DNS on those);
# iptables: netavark sets up NAT and published ports with it (only a Suggests of podman).
packages=(podman runc podman-compose debootstrap uidmap slirp4netns fuse-overlayfs curl iptables
  netavark aardvark-dns)
missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [[ ${#missing[@]} -gt 0 ]]; then
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

conf=/etc/containers/containers.conf
want='# Written by MPCache scripts/container-host.sh (a host without systemd or a Docker engine).
[containers]
default_ulimits = []

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"

[network]
network_backend = "netavark"'
if [[ ! -f "$conf" ]] || [[ "$(cat "$conf")" != "$want" ]]; then
  if [[ -f "$conf" ]] && ! grep -q "MPCache scripts/container-host.sh" "$conf"; then
    log "keeping your $conf as $conf.before-mpcache"
    $SUDO cp -n "$conf" "$conf.before-mpcache"
  fi
  $SUDO mkdir -p /etc/containers
  printf '%s\n' "$want" | $SUDO tee "$conf" >/dev/null
  log "wrote $conf"
fi

# A host that ran podman with the CNI backend before keeps its bridge cni-podman0 on
# 10.88.0.1/16, the subnet netavark's default network takes too: the two routes clash and
# containers lose the outside (apt in the image build). Remove it once nothing uses it.
if ip link show cni-podman0 >/dev/null 2>&1 && [[ -z "$($SUDO podman ps -aq 2>/dev/null)" ]]; then
  $SUDO ip link del cni-podman0
  log "removed the old CNI bridge cni-podman0 (netavark's default network uses its subnet)"
fi

# The Debian mirror apt uses (deb822 sources first, then the one-line format).
mirror=""
for f in /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list.d/*.sources; do
  [[ -f "$f" ]] || continue
  mirror="$(awk '/^URIs:/ {print $2; exit}' "$f")"
  [[ -n "$mirror" && "$mirror" != *security* ]] && break
  mirror=""
done
if [[ -z "$mirror" && -f /etc/apt/sources.list ]]; then
  mirror="$(awk '$1 == "deb" && $0 !~ /security/ {for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) {print $i; exit}}' /etc/apt/sources.list)"
fi
mirror="${mirror:-http://deb.debian.org/debian}"

if ! $SUDO podman image exists docker.io/library/debian:12 ||
  ! $SUDO podman image exists docker.io/library/debian:12-slim; then
  rootfs="$(mktemp -d /var/tmp/mpcache-rootfs.XXXXXX)"
  trap '$SUDO rm -rf "$rootfs"' EXIT
  log "making the debian:12 base image with debootstrap from $mirror (a few minutes)"
  $SUDO debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >/dev/null
  # The image's own apt sources: the same mirror, plus security updates.
  printf 'deb %s bookworm main\ndeb %s bookworm-updates main\n' "$mirror" "$mirror" |
    $SUDO tee "$rootfs/etc/apt/sources.list" >/dev/null
  $SUDO rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  $SUDO tar -C "$rootfs" -c . | $SUDO podman import - localhost/debian:12 >/dev/null
  $SUDO podman tag localhost/debian:12 docker.io/library/debian:12
  $SUDO podman tag localhost/debian:12 docker.io/library/debian:12-slim
  log "imported debian:12 and debian:12-slim"
fi

if [[ $print_engine -eq 1 ]]; then echo podman; fi
log "ready: podman $($SUDO podman --version | awk '{print $3}'), podman-compose; build with" \
  "'podman build -f docker/Dockerfile -t mpcache .'"
