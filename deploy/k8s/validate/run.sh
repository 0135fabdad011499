#!/bin/sh
# The ctest test deploy.k8s_manifests: installs the pinned validator (package-lock.json)
# into BUILD_DIR/k8s-validate, with `npm ci` only when node_modules is missing or the
# lock changed, and runs validate.mjs there on K8S_DIR (default: deploy/k8s).
#   run.sh BUILD_DIR [K8S_DIR]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 1 ] || { echo "usage: run.sh BUILD_DIR [K8S_DIR]" >&2; exit 2; }
build=$1
k8s=${2:-$here/..}

for tool in node npm; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "run.sh: '$tool' not found: the manifest check needs Node.js >= 18 and npm (apt-get install nodejs npm)" >&2
    exit 1
  fi
done
if ! node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 18 ? 0 : 1)'; then
  echo "run.sh: Node.js $(node --version) is too old, the manifest check needs >= 18 (apt-get install nodejs npm)" >&2
  exit 1
fi

dir=$build/k8s-validate
stamp=$dir/node_modules/.mpcache-installed-lock  # the lock of the last `npm ci` that succeeded
mkdir -p "$dir"
if [ ! -f "$stamp" ] || ! cmp -s "$here/package-lock.json" "$stamp" \
   || ! cmp -s "$here/package.json" "$dir/package.json"; then
  cp "$here/package.json" "$here/package-lock.json" "$dir/"
  echo "run.sh: npm ci in $dir" >&2
  (cd "$dir" && npm ci --no-audit --no-fund --prefer-offline) >&2
  cp "$here/package-lock.json" "$stamp"
fi
# Next to its node_modules, so that its imports (ES modules ignore NODE_PATH) resolve there.
cp "$here/validate.mjs" "$here/rules.mjs" "$dir/"
exec node "$dir/validate.mjs" "$k8s"
