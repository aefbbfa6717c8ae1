#!/usr/bin/env bash
# A longer fuzz run than CI's: each target for $1 seconds (default 600), in the
# sanitized build of scripts/sanitize-fuzz.sh (./build-asan), without rerunning the
# CPU tier. The corpus each run grows stays in build-asan/fuzz-corpus/<target>; a
# finding is left in build-asan/fuzz-artifacts/<target>/ and fails the script.
# Usage: scripts/fuzz-long.sh [seconds per target]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
TIMEROOF_FUZZ_SECONDS=${1:-600} TIMEROOF_FUZZ_ONLY=1 exec "$root/scripts/sanitize-fuzz.sh"
