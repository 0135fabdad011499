#!/usr/bin/env bash
# On a machine with internet access: downloads the small real test model (stories260K)
# and its tokenizer from their public source (karpathy/tinyllamas on Hugging Face) into
# DIR (default ./models), then checks their md5 sums. Afterwards:
#   export MPCACHE_MODEL_DIR=DIR
set -euo pipefail
dir=${1:-models}
mkdir -p "$dir"
base="https://huggingface.co/karpathy/tinyllamas/resolve/main/stories260K"
for f in stories260K.bin tok512.bin; do
  if [ ! -s "$dir/$f" ]; then
    echo "fetch-models: downloading $f" >&2
    curl -fL --retry 3 -o "$dir/$f.part" "$base/$f"
    mv "$dir/$f.part" "$dir/$f"
  fi
done
(cd "$dir" && md5sum -c <<'SUMS'
961b3bc7c4d82d90ca963f02b7e0de5d  stories260K.bin
2b4a5ca2ec4199f7a12e1b9a2d6f2d82  tok512.bin
SUMS
)
echo "fetch-models: done; export MPCACHE_MODEL_DIR=$(cd "$dir" && pwd)" >&2
