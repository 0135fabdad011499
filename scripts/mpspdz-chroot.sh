#!/usr/bin/env bash
# MP-SPDZ beside us on a host without a container engine (issue 16): the environment of the
# anchors' Dockerfile (Debian 12 and the packages its RUN line installs; Boost 1.81 stays
# inside) as a debootstrap chroot, and the anchors' inside.sh run in it, so `scripts/bench.sh
# mpspdz` measures MP-SPDZ where podman and docker cannot run (no daemon, no registry).
#
#   scripts/mpspdz-chroot.sh make DIR
#       Debian 12 (bookworm) into DIR with debootstrap (installed with apt-get when missing),
#       then the packages the anchors' Dockerfile names. Idempotent: a DIR already made (it
#       holds /etc/mpspdz-chroot with the package list) only gets what is missing. Needs root
#       and a Debian mirror (MPCACHE_DEBIAN_MIRROR, default http://deb.debian.org/debian).
#   scripts/mpspdz-chroot.sh run DIR SRC
#       The anchors' inside.sh in DIR, with the MP-SPDZ tree SRC at /src and the anchors at
#       /bench (read only): builds MP-SPDZ into SRC the first time, makes its fake
#       preprocessing, prints each program's timer line, exactly as the anchors' bench.sh
#       does in a container. /proc, /dev and the two folders are bind-mounted for the run
#       and unmounted afterwards, also on failure.
#
#   MPCACHE_SHARED  the folder holding anchors/mpspdz (default ../shared beside the checkout)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
anchors=${MPCACHE_SHARED:-$root/../shared}/anchors/mpspdz

usage() {
  echo "usage: $0 make DIR | run DIR SRC   (DIR: the chroot; SRC: an MP-SPDZ tree)" >&2
  exit 2
}
die() {
  echo "mpspdz-chroot.sh: $*" >&2
  exit 1
}
[ $# -ge 2 ] || usage
cmd=$1 dir=$2
case "$cmd" in
  make) [ $# -eq 2 ] || usage ;;
  run) [ $# -eq 3 ] || usage ;;
  *)
    echo "mpspdz-chroot.sh: unknown command '$cmd'" >&2
    usage
    ;;
esac
if [ ! -f "$anchors/Dockerfile" ] || [ ! -f "$anchors/inside.sh" ]; then
  die "no Dockerfile and inside.sh in $anchors (set MPCACHE_SHARED to the folder holding anchors/)"
fi
need_root() {
  [ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot and bind mounts)"
}

# The packages of the Dockerfile's `apt-get install ... \` line and its continuations, up to
# the `&&` that ends the command: the one list, read where it is kept.
packages() {
  awk '/apt-get install/ { on = 1 }
       on { for (i = 1; i <= NF; i++) {
              if ($i == "&&" && seen) { exit }
              if (seen && $i != "\\" && $i !~ /^-/) print $i
              if ($i == "install") seen = 1 } }' "$anchors/Dockerfile"
}

make_root() {
  local mirror=${MPCACHE_DEBIAN_MIRROR:-http://deb.debian.org/debian} list
  list=$(packages | tr '\n' ' ')
  [ -n "$list" ] || die "found no package list in $anchors/Dockerfile"
  need_root
  if [ ! -x "$dir/usr/bin/apt-get" ]; then
    command -v debootstrap >/dev/null || apt-get install -y -q debootstrap >/dev/null
    mkdir -p "$dir"
    echo "mpspdz-chroot.sh: Debian 12 into $dir (debootstrap, a few minutes) ..." >&2
    debootstrap --variant=minbase bookworm "$dir" "$mirror" >"$dir.debootstrap.log" 2>&1 ||
      die "debootstrap failed (the last lines of $dir.debootstrap.log: $(tail -3 "$dir.debootstrap.log"))"
  fi
  # A container gets an /etc/hosts; debootstrap leaves none, and MP-SPDZ's parties find each
  # other at `localhost`.
  if ! grep -qw localhost "$dir/etc/hosts" 2>/dev/null; then
    printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' >>"$dir/etc/hosts"
  fi
  if [ "$(cat "$dir/etc/mpspdz-chroot" 2>/dev/null)" = "$list" ]; then
    echo "mpspdz-chroot.sh: $dir is ready" >&2
    return 0
  fi
  cp /etc/resolv.conf "$dir/etc/resolv.conf"
  echo "mpspdz-chroot.sh: installing $list..." >&2
  # shellcheck disable=SC2086 # the list is words
  chroot "$dir" /usr/bin/env DEBIAN_FRONTEND=noninteractive bash -c \
    "apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends $list procps >/dev/null" ||
    die "apt-get in $dir failed"
  echo "$list" >"$dir/etc/mpspdz-chroot"
}

# The run's bind mounts, undone (innermost first) when the script exits, also on failure.
mounted=()
unmount_all() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[i]}" 2>/dev/null || true; done
}
mount_at() {  # mount_at WHAT WHERE [ro]
  mkdir -p "$2"
  mount --bind "$1" "$2"
  mounted+=("$2")
  if [ "${3:-}" = ro ]; then mount -o remount,bind,ro "$2"; fi
}

run_in_root() {
  local src=$3
  [ -f "$dir/etc/mpspdz-chroot" ] || die "$dir is not made yet: run $0 make $dir first"
  if [ ! -f "$src/compile.py" ] || [ ! -f "$src/Makefile" ]; then
    die "$src is not an MP-SPDZ source tree"
  fi
  src=$(cd "$src" && pwd)
  need_root
  trap unmount_all EXIT
  mount_at /proc "$dir/proc"
  mount_at /dev "$dir/dev"
  mount_at "$src" "$dir/src"
  mount_at "$anchors" "$dir/bench" ro
  chroot "$dir" /usr/bin/env HOME=/root bash /bench/inside.sh
}

case "$cmd" in
  make) make_root ;;
  run) run_in_root "$@" ;;
esac
