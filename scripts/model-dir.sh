# Sourced by demo.sh and test.sh: sets and exports MPCACHE_MODEL_DIR as an absolute path
# (default: ../shared/models beside the checkout), or exits with a clear message.
#   resolve_model_dir CALLER ROOT
resolve_model_dir() {
  local caller=$1 root=$2
  if [ -z "${MPCACHE_MODEL_DIR:-}" ]; then
    if [ -d "$root/../shared/models" ]; then
      MPCACHE_MODEL_DIR="$root/../shared/models"
    else
      echo "$caller: set MPCACHE_MODEL_DIR to the folder holding stories260K.bin and tok512.bin" \
           "(scripts/fetch-models.sh DIR downloads them)" >&2
      exit 1
    fi
  fi
  if [ ! -d "$MPCACHE_MODEL_DIR" ]; then
    echo "$caller: MPCACHE_MODEL_DIR=$MPCACHE_MODEL_DIR is not a folder" >&2
    exit 1
  fi
  MPCACHE_MODEL_DIR=$(cd "$MPCACHE_MODEL_DIR" && pwd)
  export MPCACHE_MODEL_DIR
}
