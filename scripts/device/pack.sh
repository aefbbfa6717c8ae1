#!/usr/bin/env bash
# Runs HERE (no GPU needed): builds, then copies the stripped binaries the device
# machine needs into .carry/ (git-ignored), which the device tool carries.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${TIMEROOF_BUILD_DIR:-$root/build}
"$root/scripts/build.sh"
rm -rf "$root/.carry" && mkdir -p "$root/.carry/tests"
cp "$build/timeroof" "$root/.carry/"
cp "$build/bench/"counters_check "$build/bench/"runner_vs_bare "$build/bench/"harness_overhead "$root/.carry/"  # validation programs
find "$build/tests" -maxdepth 2 -type f -name '*_test' -perm -u+x -exec cp {} "$root/.carry/tests/" \;
strip --strip-debug "$root/.carry/"* "$root/.carry/tests/"* 2>/dev/null || true
du -sh "$root/.carry"
