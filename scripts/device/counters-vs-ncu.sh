#!/usr/bin/env bash
# Runs ON THE DEVICE MACHINE from .carry/ (pack.sh): the counters validation.
# 1. `counters_check ours`: our in-process range profiler on kernels with analytic counts.
# 2. `ncu --metrics ... counters_check plain`: Nsight Compute on the same kernels, in a
#    separate process (one CUPTI profiler client per process).
# 3. counters_compare.py: ours vs analytic vs ncu per metric, and the wall-time ratio.
# Both start every kernel from a cold L2 (ncu: --cache-control all, its default).
# Then the same for 18 cuDNN fp16 convolutions (--conv): analytic Tensor-Core FLOPs
# and the speed ratio the counters issue asks for.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=${OUT:-$root/device-out}
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)

wall() {  # wall seconds of a command, its stdout to $1
  local file=$1; shift
  local t0 t1; t0=$(date +%s%N); "$@" > "$file" 2> "$file.err"; local rc=$?; t1=$(date +%s%N)
  [ $rc -eq 0 ] || { echo "failed ($rc): $*" >&2; cat "$file.err" >&2; }
  printf '%d.%03d\n' $(((t1 - t0) / 1000000000)) $(((t1 - t0) / 1000000 % 1000))
}
work=$(mktemp -d)  # $OUT brings back 8 files at most: only the results go there
status=0
for workload in kernels conv; do
  flag=""; [ $workload = conv ] && flag="--conv"
  metrics=$(.carry/counters_check ours $flag 2>/dev/null |
            python3 -c "import json,sys; print(','.join(json.load(sys.stdin)['metrics']))")
  plain_s=$(wall "$work/plain-$workload.txt" .carry/counters_check plain $flag)
  ours_s=$(wall "$work/ours-$workload.json" .carry/counters_check ours $flag)
  ncu_s=$(wall "$work/ncu-$workload.csv" "$ncu" --clock-control none --profile-from-start off \
                --metrics "$metrics" --csv --page raw --print-units base \
                .carry/counters_check plain $flag)
  echo "== $workload"
  python3 scripts/device/counters_compare.py "$work/ours-$workload.json" "$work/ncu-$workload.csv" \
    --plain-seconds "$plain_s" --ours-seconds "$ours_s" --ncu-seconds "$ncu_s" || status=1
  cp "$work/ours-$workload.json" "$work/ncu-$workload.csv" "$out/"
done
exit $status
