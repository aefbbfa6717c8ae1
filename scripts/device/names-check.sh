#!/usr/bin/env bash
# Runs ON THE DEVICE MACHINE (issues #17/#18, kernel names read at the launch),
# within about 150 s:
#  1. launch_names_test (CPU: the join of launch names to records);
#  2. gpu_activity_tracer_test: every record named at its launch, across module and
#     library unloads (each unload empties the name cache: a round's first launch
#     asks the driver, its second is a cache hit); the cost per traced launch with
#     and without naming (one driver query for 500 launches, within 2 us);
#  3. gpu_profile_test: `timeroof profile`, whose injection library's one CUPTI
#     subscriber now serves the namer and the kernel counters;
#  4. with the time left, the default attention sweep (cuDNN's runtime-compiled
#     SDPA kernels, where CUPTI's names were stale): per point its configuration,
#     kernel names and how many records' CUPTI names were corrected.
#
# Pack on the dev machine (the binaries land flat in the bundle):
#   /tmp/helpers/hpack.sh WORKTREE names17 tests/gpu/gpu_activity_tracer_test \
#     tests/cpu/launch_names_test tests/gpu/gpu_profile_test examples/nvtx_layers \
#     -- WORKTREE/scripts/device/names-check.sh
# and run `bash .carry/names17/names-check.sh` with carry [".carry/names17"].
# NAMES_CARRY names another folder holding bundle.tar.xz; NAMES_BUDGET_S the
# seconds in all (default 150). Logs: $OUT/names-logs.tgz.
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

budget=${NAMES_BUDGET_S:-150}
nvidia-smi --query-gpu=name,driver_version --format=csv
status=0
# NAME LIMIT_S [gtest args...]: runs one binary, prints its verdicts and the lines
# that carry figures.
run_test() {
  local name=$1 limit=$2
  shift 2
  local t0=$SECONDS rc
  timeout "$limit" "$bin/$name" "$@" > "$logs/$name.log" 2>&1
  rc=$?
  [ "$rc" -eq 124 ] && echo "TIMED OUT after $limit s" >> "$logs/$name.log"
  echo "== $name: rc=$rc in $((SECONDS - t0)) s"
  grep -E '^\[ +(FAILED|SKIPPED) +\] .* \([0-9]+ ms\)$|^\[  PASSED  \]|module reloads|launch names|launch name cache|corrected:|host cost per|API records|Failure$|Expected|Which is|actual|TIMED OUT' \
    "$logs/$name.log" | head -60
  # On the GPU machine every test must run: a skip is a failure here.
  if grep -qE '^\[  SKIPPED \] .* \([0-9]+ ms\)$' "$logs/$name.log"; then
    echo "   ^ skipped tests count as failures on the GPU machine"
    status=1
  fi
  [ "$rc" -eq 0 ] || status=1
}

run_test launch_names_test 20
run_test gpu_activity_tracer_test 50
run_test gpu_profile_test 60

# The attention sweep with what is left (a cut sweep keeps the points it stored).
left=$((budget - SECONDS - 15))
if [ "$left" -ge 20 ]; then
  db=$logs/attention.db
  t0=$SECONDS
  timeout "$left" "$bin/timeroof" sweep attention --no-counters --db "$db" \
    > "$logs/attention-sweep.log" 2>&1
  echo "== attention sweep: rc=$? in $((SECONDS - t0)) s (limit $left s)"
  if timeout 10 "$bin/timeroof" export --db "$db" --out "$logs/attention.json" \
    > "$logs/attention-export.log" 2>&1; then
    python3 - "$logs/attention.json" <<'PY'
import json, sys
runs = json.load(open(sys.argv[1]))["runs"]
points = [p for r in runs for p in r.get("points", [])]
renamed = 0
for p in points:
    trace = p.get("details", {}).get("trace", {})
    n = trace.get("kernels_renamed")
    renamed += n or 0
    names = [k["name"] for k in p.get("kernels", [])]
    params = ",".join(f"{k}={v}" for k, v in sorted(p.get("params", {}).items()))
    print(f"  {p.get('op')} {params} [{p.get('algorithm')}] {p.get('status')}: "
          f"renamed={n} naming={trace.get('kernel_naming', 'launch')}")
    for name in names:
        print(f"      {name[:150]}")
print(f"attention: {len(points)} points, {renamed} kernel records whose CUPTI name was corrected")
PY
  else
    echo "attention export failed: $(tail -2 "$logs/attention-export.log")"
  fi
else
  echo "== attention sweep: not run ($left s left of the budget)"
fi

tar czf "$out/names-logs.tgz" -C "$logs" .
echo "names-check: $([ $status -eq 0 ] && echo PASS || echo FAIL)"
exit $status
