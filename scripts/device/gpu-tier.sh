#!/usr/bin/env bash
# Runs ON THE DEVICE MACHINE, in the repository root, from binaries packed by
# scripts/device/pack.sh into .carry/. Logs go into one archive, $OUT/gpu-tier-logs.tgz
# ($OUT brings back at most 8 files), with the summary and `info --json` beside it.
# Every test binary runs (CPU tier too: the binaries must work there as well);
# GPU-tier tests must pass, not skip. GPU_TIER_ONLY / GPU_TIER_EXCEPT (extended regexes
# on the binary's name) split the tier over calls that must each end within the device's
# per-command limit, e.g. GPU_TIER_EXCEPT=foundation in one call, GPU_TIER_ONLY=foundation
# in the next.
set -uo pipefail
source "$(dirname "$0")/setup.sh"
export TIMEROOF_SAMPLE=$root/samples/sample-full-run-h200.json.gz

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

# A cuDNN newer than the system's, where one is installed (PyTorch's pip wheel):
# fp8 attention needs 9.19+ on Hopper, so gpu_attention_test runs again on it.
# NEWER_CUDNN_DIR names another one.
newer_cudnn=${NEWER_CUDNN_DIR:-$(python3 -c "import nvidia.cudnn as m, os; print(os.path.join(list(m.__path__)[0], 'lib'))" 2>/dev/null)}
[ -n "$newer_cudnn" ] && [ -e "$newer_cudnn/libcudnn.so.9" ] || newer_cudnn=""

status=0
summary=""
for test in .carry/tests/*_test; do
  name=$(basename "$test")
  grep -qE "${GPU_TIER_ONLY:-.}" <<< "$name" || continue
  [ -n "${GPU_TIER_EXCEPT:-}" ] && grep -qE "$GPU_TIER_EXCEPT" <<< "$name" && continue
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
  # fp8 attention refused for the system cuDNN's version: by design when the test then
  # passes without a skip on the newer cuDNN.
  too_old=$(grep -c '^cuDNN .* refuses fp8 attention' "$out/$name.log")
  if [ "$too_old" -gt 0 ] && [ -n "$newer_cudnn" ]; then
    LD_LIBRARY_PATH=$newer_cudnn:$LD_LIBRARY_PATH timeout "$limit" "$test" \
      --gtest_output="xml:$out/$name-newer-cudnn.xml" > "$out/$name-newer-cudnn.log" 2>&1
    newer_rc=$?
    newer_skipped=$(grep -cE '^\[  SKIPPED \] .* \([0-9]+ ms\)$' "$out/$name-newer-cudnn.log")
    summary+="$name on $newer_cudnn: rc=$newer_rc skipped=$newer_skipped"$'\n'
    if [ "$newer_rc" -eq 0 ] && [ "$newer_skipped" -eq 0 ]; then
      skipped=$((skipped - too_old))
    else
      status=1
      cp "$out/$name-newer-cudnn.log" "$final/"
    fi
  fi
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
