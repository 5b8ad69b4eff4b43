#!/usr/bin/env bash
# Quick start 2: set up, build, and run every test (the lit suite, whose unit
# tests run each gtest case as one lit test). Ends with "N passed, N failed".
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${DSF_BUILD_DIR:-$root/build}"
"$root/scripts/setup.sh"
cmake --build "$build" --target DsfUnitTests
log="$build/test-log.txt"
set +e
/usr/lib/llvm-22/bin/lit -sv "$build/test" "$build/test/unit" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
count() { sed -nE "s/^ +$1 *: +([0-9]+).*/\1/p" "$log" | head -n1; }
passed=$(count Passed); failed=$(count Failed); unsupported=$(count Unsupported)
unresolved=$(count Unresolved); timedout=$(count "Timed Out")
failed=$(( ${failed:-0} + ${unresolved:-0} + ${timedout:-0} ))
echo "${passed:-0} passed, ${failed} failed, ${unsupported:-0} skipped"
if [[ $status -ne 0 || ${passed:-0} -eq 0 ]]; then exit 1; fi
