#!/usr/bin/env bash
# README command 2: install what is needed, build, and run every test.
# GPU-tier tests (label `gpu`) skip with the reason where no GPU is present.
# Then the CPU tier again under ASan + UBSan and a short run of each fuzz target
# (scripts/sanitize-fuzz.sh, its own build in ./build-asan); TIMEROOF_SANITIZE_FUZZ=0 skips it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TIMEROOF_BUILD_DIR:-$root/build}
"$root/scripts/build.sh" --tests
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" "$@"
if [ "${TIMEROOF_SANITIZE_FUZZ:-1}" != 0 ]; then
  "$root/scripts/sanitize-fuzz.sh"
fi
