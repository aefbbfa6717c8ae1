#!/usr/bin/env bash
# README command 2: install what is needed, build, and run every test.
# GPU-tier tests (label `gpu`) skip with the reason where no GPU is present.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TIMEROOF_BUILD_DIR:-$root/build}
"$root/scripts/build.sh"
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" "$@"
