#!/usr/bin/env bash
# Installs the Debian 12 packages MPCache builds and runs with. Idempotent: does nothing
# when everything is already installed.
#
#   install-deps.sh           what the build, the demo and the daemons need
#   install-deps.sh --fuzz    also clang and its sanitizer/libFuzzer runtime (the test
#                             command's sanitizer and fuzz pass)
set -euo pipefail

packages=(
  build-essential cmake pkg-config git
  libboost-dev libssl-dev openssl libprotobuf-dev protobuf-compiler
  libspdlog-dev libyaml-cpp-dev libgtest-dev libgmock-dev libcli11-dev nlohmann-json3-dev
  libbenchmark-dev iproute2 procps
)
for arg in "$@"; do
  case "$arg" in
    --fuzz) packages+=(clang libclang-rt-14-dev) ;;
    *) echo "install-deps: unknown option '$arg' (the options: --fuzz)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
