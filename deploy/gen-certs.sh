#!/usr/bin/env bash
# Make the certificates MPCache's daemons use for mutually authenticated TLS 1.3.
#
#   deploy/gen-certs.sh [--force] [--rogue] [--days N] [--owner UID[:GID]] DIR
#
# Writes into DIR (created if missing):
#   ca.crt ca.key                      the deployment CA (EC P-256)
#   party0.{crt,key} .. party2.{crt,key}   CN/SAN mpcache-party-0 .. mpcache-party-2
#   dealer.{crt,key}                   CN/SAN mpcache-dealer
#   client.{crt,key}                   CN/SAN mpcache-client
# Every leaf certificate also carries SAN DNS:localhost and IP:127.0.0.1 so that the
# loopback demo works; the daemons check the role name among the SAN DNS names (the CN is
# ignored when a certificate has SANs), not the host.
#
# With --rogue it also writes rogue/ca.{crt,key} and rogue/<role>.{crt,key}: the same
# names signed by a second, unrelated CA, for tests that must be refused.
#
# Idempotent: existing files are kept unless --force is given. Private keys are 0600 (also
# the kept ones: the daemons refuse a key that group or others can read).
#
# With --owner UID[:GID] the daemons' keys (party0..2.key, dealer.key) are given to that
# user (root needed), still 0600: the containers run as uid 10001, so
# `--owner 10001` makes a folder the compose file can mount as it is. The CA key and the
# client key stay with the caller.
set -euo pipefail

usage() {
  sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'
}

force=0
rogue=0
days=825
owner=""
dir=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --force) force=1 ;;
    --rogue) rogue=1 ;;
    --days)
      shift
      days="${1:?--days needs a number}"
      ;;
    --owner)
      shift
      owner="${1:?--owner needs a user id, e.g. 10001 or 10001:10001}"
      if ! [[ "$owner" =~ ^[0-9]+(:[0-9]+)?$ ]]; then
        echo "gen-certs.sh: --owner '$owner' must be UID or UID:GID in digits (the containers run as 10001)" >&2
        exit 2
      fi
      ;;
    -h | --help)
      usage
      exit 0
      ;;
    -*)
      echo "gen-certs.sh: unknown option '$1' (see --help)" >&2
      exit 2
      ;;
    *)
      if [[ -n "$dir" ]]; then
        echo "gen-certs.sh: only one output folder, got '$dir' and '$1'" >&2
        exit 2
      fi
      dir="$1"
      ;;
  esac
  shift
done
if [[ -z "$dir" ]]; then
  echo "gen-certs.sh: missing output folder (usage: gen-certs.sh [--force] [--rogue] [--days N] [--owner UID[:GID]] DIR)" >&2
  exit 2
fi
command -v openssl >/dev/null || {
  echo "gen-certs.sh: openssl not found (apt-get install openssl)" >&2
  exit 1
}

roles=(party0:mpcache-party-0 party1:mpcache-party-1 party2:mpcache-party-2
  dealer:mpcache-dealer client:mpcache-client)

# make_ca OUTDIR NAME
make_ca() {
  local out="$1" name="$2"
  mkdir -p "$out"
  if [[ $force -eq 0 && -s "$out/ca.crt" && -s "$out/ca.key" ]]; then
    return 0
  fi
  (umask 077 && openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 \
    -out "$out/ca.key" 2>/dev/null)
  openssl req -x509 -new -key "$out/ca.key" -sha256 -days "$days" -subj "/CN=$name" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -out "$out/ca.crt" 2>/dev/null
  # A new CA invalidates every leaf signed by the old one.
  force_leaves=1
}

# make_leaf OUTDIR FILE CN
make_leaf() {
  local out="$1" file="$2" cn="$3"
  if [[ $force -eq 0 && $force_leaves -eq 0 && -s "$out/$file.crt" && -s "$out/$file.key" ]]; then
    return 0
  fi
  local tmp
  tmp="$(mktemp -d)"
  (umask 077 && openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 \
    -out "$out/$file.key" 2>/dev/null)
  openssl req -new -key "$out/$file.key" -subj "/CN=$cn" -out "$tmp/req.csr" 2>/dev/null
  cat >"$tmp/ext.cnf" <<EOF
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth,clientAuth
subjectAltName=DNS:$cn,DNS:localhost,IP:127.0.0.1
EOF
  openssl x509 -req -in "$tmp/req.csr" -CA "$out/ca.crt" -CAkey "$out/ca.key" \
    -CAcreateserial -CAserial "$tmp/ca.srl" -sha256 -days "$days" \
    -extfile "$tmp/ext.cnf" -out "$out/$file.crt" 2>/dev/null
  rm -rf "$tmp"
}

# make_set OUTDIR CA_NAME
make_set() {
  local out="$1"
  force_leaves=0
  make_ca "$out" "$2"
  local entry
  for entry in "${roles[@]}"; do
    make_leaf "$out" "${entry%%:*}" "${entry#*:}"
  done
  # The daemons refuse a key that group or others can read; this also repairs the mode of
  # keys kept from an earlier run (umask 077 only applies to files created now).
  chmod 600 "$out/ca.key"
  for entry in "${roles[@]}"; do
    chmod 600 "$out/${entry%%:*}.key"
  done
}

make_set "$dir" "mpcache-ca"
if [[ $rogue -eq 1 ]]; then
  make_set "$dir/rogue" "mpcache-rogue-ca"
fi
if [[ -n "$owner" ]]; then
  for f in party0 party1 party2 dealer; do
    if ! chown "$owner" "$dir/$f.key" 2>/dev/null; then
      echo "gen-certs.sh: cannot give $dir/$f.key to $owner (--owner needs root: sudo)" >&2
      exit 1
    fi
  done
fi
echo "certificates in $dir" >&2
