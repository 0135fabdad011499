#!/usr/bin/env bash
# docker/Dockerfile builds what the README's build builds, from the same package list:
#  - neither stage has an apt-get list of its own: both run scripts/install-deps.sh (the
#    runtime stage with --runtime);
#  - it builds and installs exactly the commands src/tools/CMakeLists.txt installs;
#  - every shared library those binaries (built here, passed as arguments) load comes from
#    a package of `install-deps.sh --runtime` or one of their dependencies (or the C/C++
#    runtime every Debian image has), so the slim runtime image can run them.
#   dockerfile_test.sh ROOT BINARY...
set -euo pipefail
root=$1
shift
dockerfile=$root/docker/Dockerfile
fail=0
err() { echo "dockerfile_test: $*" >&2; fail=1; }

if grep -nE 'apt-get[^|&;]*install' "$dockerfile"; then
  err "docker/Dockerfile installs packages itself; add them to scripts/install-deps.sh instead"
fi
grep -q 'RUN mpcache-install-deps &&' "$dockerfile" ||
  err "the build stage must run scripts/install-deps.sh (as mpcache-install-deps)"
grep -q 'RUN mpcache-install-deps --runtime' "$dockerfile" ||
  err "the runtime stage must run scripts/install-deps.sh --runtime"
grep -q '^!scripts/install-deps.sh$' "$root/docker/Dockerfile.dockerignore" ||
  err "docker/Dockerfile.dockerignore must let scripts/install-deps.sh into the context"

# The five commands, from the install rule of src/tools/CMakeLists.txt.
mapfile -t tools < <(awk '/^foreach\(tool /,/\)/' "$root/src/tools/CMakeLists.txt" | tr ' ()' '\n\n\n' |
  grep '^mpcache-' | sort)
[[ ${#tools[@]} -ge 5 ]] || err "could not read the installed tools from src/tools/CMakeLists.txt"
# The --target list (joined continuation lines) and the binaries copied into the image.
flat=$(sed -e ':a' -e '/\\$/N; s/\\\n//; ta' "$dockerfile")
mapfile -t targets < <(grep -o -- '--target [a-z -]*' <<<"$flat" | head -n1 | tr ' ' '\n' | grep '^mpcache-' | sort)
mapfile -t installed < <(grep -o 'install -m 0755 .*' <<<"$flat" | head -n1 | grep -o '/mpcache-[a-z]*' | tr -d / | sort)
[[ "${targets[*]}" == "${tools[*]}" ]] ||
  err "the image builds '${targets[*]}', the README's build installs '${tools[*]}'"
[[ "${installed[*]}" == "${tools[*]}" ]] ||
  err "the image installs '${installed[*]}', the README's build installs '${tools[*]}'"

# Runtime packages and their dependency closure (as this Debian 12 host resolves them).
mapfile -t allowed < <("$root/scripts/install-deps.sh" --list --runtime)
allowed+=(libc6 libstdc++6 libgcc-s1)
declare -A closure=()
queue=("${allowed[@]}")
while [[ ${#queue[@]} -gt 0 ]]; do
  p=${queue[0]}
  queue=("${queue[@]:1}")
  [[ -n "${closure[$p]:-}" ]] && continue
  closure[$p]=1
  deps=$(dpkg-query -W -f='${Depends},${Pre-Depends}' "$p" 2>/dev/null || true)
  for d in $(tr ',|' '\n\n' <<<"$deps" | sed 's/([^)]*)//g; s/:any//; s/ //g' | grep -v '^$'); do
    [[ -z "${closure[$d]:-}" ]] && queue+=("$d")
  done
done
for bin in "$@"; do
  [[ -x "$bin" ]] || { err "no binary $bin (build it first)"; continue; }
  while read -r lib; do
    owner=$(dpkg-query -S "$lib" 2>/dev/null | head -n1 | cut -d: -f1 || true)
    if [[ -z "$owner" ]]; then
      real=$(readlink -f "$lib")
      owner=$(dpkg-query -S "$real" 2>/dev/null | head -n1 | cut -d: -f1 || true)
    fi
    if [[ -z "$owner" ]]; then
      err "$(basename "$bin") loads $lib, which no Debian package owns"
    elif [[ -z "${closure[$owner]:-}" ]]; then
      err "$(basename "$bin") loads $lib from package $owner, which 'install-deps.sh --runtime' does not install: add it to runtime_packages"
    fi
  done < <(ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// {print $3}')
done
if [[ $fail -ne 0 ]]; then exit 1; fi
echo "dockerfile_test: the image builds ${tools[*]} with install-deps.sh's lists; $# binaries' libraries covered"
