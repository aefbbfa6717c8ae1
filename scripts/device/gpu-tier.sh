#!/usr/bin/env bash
# Runs ON THE DEVICE MACHINE, in the repository root, from binaries packed by
# scripts/device/pack.sh into .carry/. Logs go into one archive, $OUT/gpu-tier-logs.tgz
# ($OUT brings back at most 8 files), with the summary and `info --json` beside it.
# Every test binary runs (CPU tier too: the binaries must work there as well);
# GPU-tier tests must pass, not skip.
set -uo pipefail
source "$(dirname "$0")/setup.sh"
export TIMEROOF_SAMPLE=$root/samples/sample-run.json.gz

{
  echo "== machine"; date -u; hostname
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit --format=csv
  grep RmProfilingAdminOnly /proc/driver/nvidia/params 2>/dev/null
  ldd .carry/timeroof | grep -E "not found|cudnn|cupti|cublas|sqlite" || true
} > "$out/machine.txt" 2>&1
cat "$out/machine.txt"

echo "== timeroof info"
.carry/timeroof info 2>&1 | tee "$out/info.txt"
.carry/timeroof info --json > "$out/info.json" 2>&1

status=0
summary=""
for test in .carry/tests/*_test; do
  name=$(basename "$test")
  # One hung test must not cost the whole call (nothing comes back past the limit).
  # The foundation test runs the whole main job (`timeroof run`: ~300 s on an H100
  # since host-bound points take three timing windows), so it gets more.
  limit=${TEST_TIMEOUT_S:-200}
  [ "$name" = gpu_foundation_test ] && limit=${FOUNDATION_TIMEOUT_S:-480}
  timeout "$limit" "$test" --gtest_output="xml:$out/$name.xml" > "$out/$name.log" 2>&1
  rc=$?
  [ "$rc" -eq 124 ] && echo "TIMED OUT after $limit s" >> "$out/$name.log"
  # A test that needs more GPUs than this machine has skips by design.
  all_skips=$(grep -cE '^\[  SKIPPED \] .* \([0-9]+ ms\)$' "$out/$name.log")
  by_design=$(grep -c '^needs [a-z0-9]* GPUs' "$out/$name.log")
  skipped=$((all_skips - by_design))
  summary+="$name: rc=$rc skipped=$skipped"$'\n'
  [ "$rc" -eq 0 ] || status=1
  # On the device, a GPU test that skips is a failure: it proved nothing.
  case "$name" in gpu_*) [ "$skipped" -eq 0 ] || status=1 ;; esac
  # What has finished so far comes back even if the call runs out of time.
  printf '%s' "$summary" > "$final/summary.txt"
  [ "$rc" -eq 0 ] || cp "$out/$name.log" "$final/"
done
grep -h -E '^(GPU 0|counters:)' "$out"/gpu_*.log || true
echo "== summary"; printf '%s' "$summary" | tee "$out/summary.txt"
tar czf "$final/gpu-tier-logs.tgz" -C "$out" .
cp "$out/summary.txt" "$out/info.json" "$final/"
exit $status
