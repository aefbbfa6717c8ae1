#!/usr/bin/env bash
# Runs ON THE DEVICE MACHINE from .carry/ (pack.sh): the harness experiments
# (bench/harness_overhead.cpp: what the measuring harness itself adds to a call's
# time), then the GPU tests of the timing strategies and of the operators they
# time. Logs into $OUT; the experiments' table is printed last.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=${OUT:-$root/device-out}
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
status=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv \
  | tee "$out/machine.txt"
for test in ${TESTS-gpu_measure_test gpu_conv2d_test gpu_runner_test}; do
  t0=$(date +%s)
  .carry/tests/$test > "$out/$test.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] || status=1
  echo "$test: exit $rc in $(( $(date +%s) - t0 )) s; $(grep -E '^\[  (PASSED|FAILED)  \]' "$out/$test.log" | tr '\n' ' ')"
  grep -E '^\[  FAILED  \]|Failure|error' "$out/$test.log" | head -20
done
t0=$(date +%s)
.carry/harness_overhead ${ROUNDS:+--rounds $ROUNDS} > "$out/harness_overhead.txt" 2>&1 || status=1
echo "harness_overhead: $(( $(date +%s) - t0 )) s"
cat "$out/harness_overhead.txt"
exit $status
