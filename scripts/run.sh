#!/usr/bin/env bash
# README command 1: install what is needed, build, and run the main job.
# Extra arguments go to `timeroof run` (e.g. --device 1 --db results.db).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/build.sh"
exec "${TIMEROOF_BUILD_DIR:-$root/build}/timeroof" run "$@"
