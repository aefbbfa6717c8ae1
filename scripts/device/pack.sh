#!/usr/bin/env bash
# Runs HERE (no GPU needed): builds, then copies the stripped binaries the device
# machine needs into .carry/ (git-ignored), which the device tool carries.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${TIMEROOF_BUILD_DIR:-$root/build}
"$root/scripts/build.sh"
rm -rf "$root/.carry" && mkdir -p "$root/.carry/tests"
cp "$build/timeroof" "$root/.carry/"
cp "$build/bench/"counters_check "$build/bench/"runner_vs_bare "$build/bench/"harness_overhead \
  "$build/bench/"journal_lines "$root/.carry/"  # validation programs
find "$build/tests" -maxdepth 2 -type f -name '*_test' -perm -u+x -exec cp {} "$root/.carry/tests/" \;
# `timeroof profile`'s injection library beside it, and the programs it profiles in the
# GPU tests and the cost benchmarks (tracing-cost.sh, launch_cost.py).
cp "$build/libtimeroof_inject.so" "$root/.carry/"
mkdir -p "$root/.carry/examples" && cp "$build/examples/"nvtx_layers "$build/examples/"launch_cost "$root/.carry/examples/"
strip --strip-debug "$root/.carry/"* "$root/.carry/tests/"* "$root/.carry/examples/"* 2>/dev/null || true
du -sh "$root/.carry"
