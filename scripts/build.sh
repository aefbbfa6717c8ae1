#!/usr/bin/env bash
# Configures and builds timeroof into ./build (or $TIMEROOF_BUILD_DIR).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TIMEROOF_BUILD_DIR:-$root/build}
"$root/scripts/install-deps.sh"
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTIMEROOF_WARNINGS_AS_ERRORS=ON >/dev/null
fi
cmake --build "$build" -j "$(nproc)"
