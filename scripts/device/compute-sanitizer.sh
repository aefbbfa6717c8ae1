#!/usr/bin/env bash
# Runs ON THE DEVICE MACHINE: the GPU tier's test binaries under NVIDIA's
# compute-sanitizer (issue 16). memcheck over every GPU test binary; racecheck,
# initcheck and synccheck over those whose kernels are timeroof's own. A report
# of an error by any tool fails the script. Tests that need the hardware counters
# are filtered out: the sanitizer instruments through the same profiling
# interface, so CUPTI's range profiler is unavailable under it.
# Usage: compute-sanitizer.sh [SECONDS per run] [TEST NAME...] (default 150 s, every
# GPU test binary; names such as gpu_measure_test split the tier over several device
# calls, which have a time limit). Logs: $OUT/sanitizer-logs.tgz.
set -uo pipefail
source "$(dirname "$0")/setup.sh"
limit=${1:-150}
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
# The counter tests and the CLI tests (which start the tool as a child) stay out, and
# so do tests that trace with CUPTI's activity API (ThreeTimesAgreeOnALongKernel
# compares against traced kernel time: CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
# under the sanitizer, H100, 2026-11-26).
no_counters='-*Counter*:*Profiler*:*Batched*:*PerKernel*:*Cupti*:*Range*:*ThreeTimesAgreeOnALongKernel*'
status=0
summary=$out/summary.txt
run() {  # TOOL BINARY
  local tool=$1 bin=$2 name log
  name=$(basename "$bin")
  log=$out/$tool-$name.log
  # API errors are left out: the tests provoke some on purpose (an out-of-memory point,
  # an uncapturable call) and timeroof checks every return code itself.
  timeout "$limit" "$sanitizer" --tool "$tool" --error-exitcode 99 --print-limit 20 \
    --report-api-errors no \
    "$bin" --gtest_filter="$no_counters" > "$log" 2>&1
  local rc=$?
  local errors
  errors=$(grep -Eo 'ERROR SUMMARY: [0-9]+ error' "$log" | tail -1)
  echo "$tool $name: rc=$rc ${errors:-no summary} $(grep -cE '^\[       OK \]' "$log") ok" | tee -a "$summary"
  # 124: the time limit, reported but not a finding; 99: the sanitizer found something.
  if [ "$rc" -eq 99 ] || { [ -n "$errors" ] && [ "${errors#ERROR SUMMARY: 0 }" = "$errors" ]; }; then
    status=1
  fi
}
names=("${@:2}")
[ ${#names[@]} -eq 0 ] && for bin in .carry/tests/gpu_*_test; do names+=("$(basename "$bin")"); done
for name in "${names[@]}"; do
  [ -x ".carry/tests/$name" ] && run memcheck ".carry/tests/$name"
done
for tool in racecheck initcheck synccheck; do
  for name in gpu_measure_test gpu_transfer_test; do
    case " ${names[*]} " in *" $name "*) [ -x ".carry/tests/$name" ] && run "$tool" ".carry/tests/$name" ;; esac
  done
done
echo "status=$status" | tee -a "$summary"
tar czf "$final/sanitizer-logs.tgz" -C "$out" .
cp "$summary" "$final/"
exit $status
