#!/usr/bin/env bash
# Installs the Debian 12 packages MPCache builds and runs with. Idempotent: does nothing
# when everything is already installed. The one list of packages: the README's build,
# the demo, the tests and docker/Dockerfile (both stages) all install through this script
# (tests/deploy/dockerfile_test.sh checks that the image needs nothing else).
#
#   install-deps.sh            what the build, the demo and the daemons need
#   install-deps.sh --tests    also Node.js and npm when missing (the manifest test) and
#                              gnuplot (mpcache-tune's plot test)
#   install-deps.sh --fuzz     also clang and its sanitizer/libFuzzer runtime (the test
#                              command's sanitizer and fuzz pass)
#   install-deps.sh --bench    also python3 (scripts/bench.sh reads the tools' JSON with it)
#                              and gnuplot (mpcache-tune --plot, the report's plots)
#   install-deps.sh --runtime  only what the built binaries need to run (the image's
#                              runtime stage)
#   install-deps.sh --list [--runtime|--fuzz]   print the packages, install nothing
set -euo pipefail

build_packages=(
  build-essential cmake pkg-config git
  libboost-dev libssl-dev openssl libprotobuf-dev protobuf-compiler
  libspdlog-dev libyaml-cpp-dev libgtest-dev libgmock-dev libcli11-dev nlohmann-json3-dev
  libbenchmark-dev iproute2 procps
)
# The shared libraries of mpcache-{party,dealer,client,model,bench} (beyond the base
# system's libc, libstdc++ and libgcc), and curl for the containers' health checks.
runtime_packages=(
  libssl3 libprotobuf32 libspdlog1.10 libfmt9 libyaml-cpp0.7
  ca-certificates curl
)
fuzz_packages=(clang libclang-rt-14-dev)
bench_packages=(python3 gnuplot-nox)

# mpcache-tune's plot test runs gnuplot. The test suite's Kubernetes manifest check runs
# Node.js (deploy/k8s/validate): Debian's only when no node is on PATH (a NodeSource nodejs
# already there conflicts with Debian's npm).
test_packages=(gnuplot-nox)
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  test_packages+=(nodejs npm)
fi

packages=("${build_packages[@]}")
list=0
for arg in "$@"; do
  case "$arg" in
    --fuzz) packages+=("${fuzz_packages[@]}") ;;
    --tests) packages+=("${test_packages[@]}") ;;
    --bench) packages+=("${bench_packages[@]}") ;;
    --runtime) packages=("${runtime_packages[@]}") ;;
    --list) list=1 ;;
    *) echo "install-deps: unknown option '$arg' (the options: --tests, --fuzz, --bench, --runtime, --list)" >&2; exit 2 ;;
  esac
done
if [ "$list" = 1 ]; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi

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
