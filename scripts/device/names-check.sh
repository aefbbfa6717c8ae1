#!/usr/bin/env bash
# Runs ON THE DEVICE MACHINE (issues #17/#18, kernel names read at the launch):
# the activity tracer's GPU test (every record named at its launch, across module
# and library unloads; the cost per launch with and without naming), the CPU test
# of the join, and `timeroof profile`'s test (the injection library, whose one
# CUPTI subscriber now serves the namer and the kernel counters). About 60-120 s.
#
# Pack on the dev machine (the binaries land flat in the bundle):
#   /tmp/helpers/hpack.sh WORKTREE names17 tests/gpu/gpu_activity_tracer_test \
#     tests/cpu/launch_names_test tests/gpu/gpu_profile_test examples/nvtx_layers \
#     -- WORKTREE/scripts/device/names-check.sh
# and run `bash .carry/names17/names-check.sh` with carry [".carry/names17"].
# NAMES_CARRY names another folder holding bundle.tar.xz. Logs: $OUT/names-logs.tgz.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
carry=${NAMES_CARRY:-$here}
[ -f "$carry/bundle.tar.xz" ] || carry=$PWD/.carry/names17
if [ ! -f "$carry/bundle.tar.xz" ]; then
  echo "names-check: no bundle.tar.xz in $here or $PWD/.carry/names17; set NAMES_CARRY" >&2
  exit 2
fi
bin=$carry/bin
mkdir -p "$bin" && tar xJf "$carry/bundle.tar.xz" -C "$bin"
out=${OUT:-$PWD/device-out}
logs=$(mktemp -d)
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export TIMEROOF_TEST_BINARY=$bin/timeroof TIMEROOF_TEST_EXAMPLES_DIR=$bin
export TIMEROOF_TEST_SOURCE_DIR=$PWD

nvidia-smi --query-gpu=name,driver_version --format=csv
status=0
# NAME LIMIT_S [gtest args...]: runs one binary, prints its verdicts and the lines
# that carry figures.
run_test() {
  local name=$1 limit=$2
  shift 2
  local t0 rc
  t0=$(date +%s)
  timeout "$limit" "$bin/$name" "$@" > "$logs/$name.log" 2>&1
  rc=$?
  [ "$rc" -eq 124 ] && echo "TIMED OUT after $limit s" >> "$logs/$name.log"
  echo "== $name: rc=$rc in $(($(date +%s) - t0)) s"
  grep -E '^\[ +(FAILED|SKIPPED) +\] .* \([0-9]+ ms\)$|^\[  PASSED  \]|module reloads|corrected:|host cost per|API records|Failure$|Expected|Which is|actual|TIMED OUT' \
    "$logs/$name.log" | head -60
  # On the GPU machine every test must run: a skip is a failure here.
  if grep -qE '^\[  SKIPPED \] .* \([0-9]+ ms\)$' "$logs/$name.log"; then
    echo "   ^ skipped tests count as failures on the GPU machine"
    status=1
  fi
  [ "$rc" -eq 0 ] || status=1
}

run_test launch_names_test 20
run_test gpu_activity_tracer_test 60
run_test gpu_profile_test 90

tar czf "$out/names-logs.tgz" -C "$logs" .
echo "names-check: $([ $status -eq 0 ] && echo PASS || echo FAIL)"
exit $status
