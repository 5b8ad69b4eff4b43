#!/usr/bin/env bash
# Quick start 1: set up, build, and run the main job: compile the tiny
# DeepSeek-V4.1 model for the CPU, give it random weights (every weight its
# artifact binds; NeMo's golden weights instead when ../shared/golden/v41-tiny
# is there) and generate tokens from a prompt; then DeepSeek-V4.1-Flash's
# KV-cache and parameter reports.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${DSF_BUILD_DIR:-$root/build}"
"$root/scripts/setup.sh"
out="$build/main-job"
mkdir -p "$out"
"$build/bin/dsf-compile" "$root/models/deepseek-v4.1-tiny" --target=cpu -o "$out/v41-tiny.dsfa"
golden="$root/../shared/golden/v41-tiny/weights.safetensors"
if [[ -f "$golden" ]]; then
  weights="$golden"
else
  weights="$out/v41-tiny-random.safetensors"
  python3 "$root/tools/scripts/dsfa_tool.py" random-weights "$out/v41-tiny.dsfa" "$weights"
fi
prompt=1,17,301,44,9,250,3,77,460,12,91,33
echo "prompt:    $prompt"
echo -n "generated: "
"$build/bin/dsf-run" "$out/v41-tiny.dsfa" --weights "$weights" --prompt-ids "$prompt" --max-new-tokens 8
"$build/bin/dsf-compile" "$root/models/deepseek-v4.1-flash" --report=kv,params "$@"
