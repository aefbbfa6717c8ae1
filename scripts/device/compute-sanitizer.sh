#!/usr/bin/env bash
# Runs ON THE DEVICE MACHINE: the GPU tier's test binaries under NVIDIA's
# compute-sanitizer (issue 16). memcheck over every GPU test binary; racecheck,
# initcheck and synccheck over the tests of timeroof's own kernels. A report
# of an error by any tool fails the script. Tests that need the hardware counters
# are filtered out: the sanitizer instruments through the same profiling
# interface, so CUPTI's range profiler is unavailable under it.
# Usage: compute-sanitizer.sh [SECONDS per run] [TEST NAME...] (default 150 s, every
# GPU test binary; names such as gpu_measure_test split the tier over several device
# calls, which have a time limit; SANITIZER_TOOLS="racecheck initcheck" a subset of the
# tools). The name `tool` runs memcheck over the tool itself
# instead: short sweeps and a quick ceilings run, the paths the CLI tests take but
# too long under the sanitizer as whole tests (a full `timeroof run` under memcheck
# passed 330 s). Logs: $OUT/sanitizer-logs.tgz.
set -uo pipefail
source "$(dirname "$0")/setup.sh"
limit=${1:-150}
# SANITIZER_TOOLS picks the tools (default all four), e.g. to spread them over calls.
tools=${SANITIZER_TOOLS:-memcheck racecheck initcheck synccheck}
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
# The counter tests and the CLI tests (which start the tool as a child) stay out, and
# so do tests that trace with CUPTI's activity API (ThreeTimesAgreeOnALongKernel
# compares against traced kernel time: CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
# under the sanitizer, H100, 2026-11-26).
no_counters='-*Counter*:*Profiler*:*Batched*:*PerKernel*:*Cupti*:*Range*:*ThreeTimesAgreeOnALongKernel*'
status=0
summary=$out/summary.txt
# The tool's last summary line: "ERROR SUMMARY: N errors" (memcheck, initcheck,
# synccheck) or "RACECHECK SUMMARY: N hazards displayed (E errors, W warnings)".
sanitizer_summary() {  # LOG
  grep -Eo '(ERROR SUMMARY: [0-9]+ errors?|RACECHECK SUMMARY: [0-9]+ hazards displayed \([0-9]+ errors?, [0-9]+ warnings?\))' "$1" | tail -1
}
found_errors() {  # EXIT CODE, SUMMARY: true where the sanitizer reported an error or a hazard
  [ "$1" -eq 99 ] && return 0
  local counts
  counts=$(grep -Eo '[0-9]+ (errors?|hazards|warnings?)' <<< "$2" | grep -Eo '^[0-9]+')
  for count in $counts; do [ "$count" -gt 0 ] && return 0; done
  return 1
}
run() {  # TOOL BINARY [GTEST FILTER]
  local tool=$1 bin=$2 filter=${3:-$no_counters} name log
  name=$(basename "$bin")
  log=$out/$tool-$name.log
  # API errors are left out: the tests provoke some on purpose (an out-of-memory point,
  # an uncapturable call) and timeroof checks every return code itself.
  timeout "$limit" "$sanitizer" --tool "$tool" --error-exitcode 99 --print-limit 20 \
    --report-api-errors no \
    "$bin" --gtest_filter="$filter" > "$log" 2>&1
  local rc=$?
  local errors
  errors=$(sanitizer_summary "$log")
  echo "$tool $name: rc=$rc ${errors:-no summary} $(grep -cE '^\[       OK \]' "$log") ok" | tee -a "$summary"
  # 124: the time limit, reported but not a finding; 99: the sanitizer found something.
  # A test that fails under the sanitizer for its timing bounds (instrumented launches
  # take milliseconds) is not a finding either: only the tool's own count is.
  found_errors "$rc" "$errors" && status=1
}
# memcheck over the timeroof binary with ARGS (the sweep's timing worker, a child,
# is followed: --target-processes all). Counters are off: CUPTI is the sanitizer's.
run_tool() {  # NAME ARGS...
  local name=$1 log=$out/memcheck-tool-$1.log
  shift
  timeout "$limit" "$sanitizer" --tool memcheck --target-processes all --error-exitcode 99 \
    --print-limit 20 --report-api-errors no .carry/timeroof "$@" --db "$out/tool.db" > "$log" 2>&1
  local rc=$? errors
  errors=$(sanitizer_summary "$log")
  echo "memcheck timeroof $name: rc=$rc ${errors:-no summary}" | tee -a "$summary"
  found_errors "$rc" "$errors" && status=1
}
names=("${@:2}")
case " ${names[*]} " in
  *" tool "*)
    run_tool conv2d sweep conv2d --batch 1,8 --precision fp16,fp32 --direction fwd,bwd_data --no-counters
    run_tool lstm sweep lstm --batch 1,4 --precision fp16 --no-counters
    run_tool ceilings ceilings --quick --sustained 0 \
      --only hbm_read,hbm_copy,l2_read,l1_read,shared_read,fp32_fma,tensor_fp16,launch_async,h2d_pinned
    ;;
esac
[ ${#names[@]} -eq 0 ] && for bin in .carry/tests/gpu_*_test; do names+=("$(basename "$bin")"); done
for name in "${names[@]}"; do
  [ "$name" = tool ] && continue
  case " $tools " in *" memcheck "*) [ -x ".carry/tests/$name" ] && run memcheck ".carry/tests/$name" ;; esac
done
# racecheck, initcheck and synccheck look at shared memory, uninitialised reads and
# barriers: they go over the tests that run timeroof's own kernels (the ceilings'
# CUDA-core, cache, HBM, mma.sync and wgmma kernels, the L2 flush, the timing
# kernels), each checked against its reference. The cuDNN and cuBLASLt kernels of
# the sweep tests are NVIDIA's; under racecheck one such test outruns a device call
# (gpu_transfer_test: 200 s in its first test) and initcheck runs out of memory on
# cuBLASLt's nvjet kernels (H100, 2026-11-25).
own_kernels() {  # TEST BINARY NAME -> the gtest filter of its own-kernel tests
  case "$1" in
    gpu_measure_test) echo "$no_counters" ;;
    # L2Flusher's test reads counters: CUPTI is the sanitizer's.
    gpu_ceilings_core_test) echo 'CeilingsCore.CudaCore*:CeilingsCore.HbmKernels*:CeilingsCore.CacheKernels*:CeilingsCore.Spin*:CeilingsCore.EmptyKernel*' ;;
    gpu_ceilings_tensor_test) echo 'TensorTiles.*' ;;
  esac
}
for tool in $tools; do
  [ "$tool" = memcheck ] && continue
  for name in gpu_measure_test gpu_ceilings_core_test gpu_ceilings_tensor_test; do
    case " ${names[*]} " in
      *" $name "*) [ -x ".carry/tests/$name" ] && run "$tool" ".carry/tests/$name" "$(own_kernels "$name")" ;;
    esac
  done
done
echo "status=$status" | tee -a "$summary"
tar czf "$final/sanitizer-logs.tgz" -C "$out" .
cp "$summary" "$final/"
exit $status
