#!/usr/bin/env bash
# Quick start 1: set up, build, and run the main job: import DeepSeek-V4.1-Flash
# and print its KV-cache and parameter reports (extra arguments go to dsf-compile).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/setup.sh"
exec "${DSF_BUILD_DIR:-$root/build}/bin/dsf-compile" "$root/models/deepseek-v4.1-flash" \
  --report=kv,params "$@"
