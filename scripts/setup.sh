#!/usr/bin/env bash
# Installs what dsf needs (Debian 12 packages) when it is missing, then
# configures and builds dsf in build/. Safe to run again: it only does what is
# left to do.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${DSF_BUILD_DIR:-$root/build}"

packages=(cmake ninja-build llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools
          clang-22 lld-22 libgtest-dev nlohmann-json3-dev python3 python3-numpy
          libhiredis-dev libxxhash-dev redis-server valgrind)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [[ $(id -u) -eq 0 ]] || sudo="sudo"
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if [[ ! -f "$build/build.ninja" ]]; then
  cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 >/dev/null
fi
cmake --build "$build"
