#!/usr/bin/env bash
# Configures and builds timeroof into ./build (or $TIMEROOF_BUILD_DIR): the tool,
# and with --tests (scripts/test.sh) the test tiers and their tools too. A build
# directory configured with the tests keeps them.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TIMEROOF_BUILD_DIR:-$root/build}
tests=OFF
if [ "${1:-}" = --tests ]; then
  tests=ON
  "$root/scripts/install-deps.sh" --tests
else
  "$root/scripts/install-deps.sh"
fi
configured=$(sed -n 's/^TIMEROOF_BUILD_TESTS:BOOL=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
if [ ! -f "$build/build.ninja" ] || { [ "$tests" = ON ] && [ "$configured" != ON ]; }; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTIMEROOF_WARNINGS_AS_ERRORS=ON \
    -DTIMEROOF_BUILD_TESTS="$tests" >/dev/null
fi
cmake --build "$build" -j "$(nproc)"
