#!/usr/bin/env bash
# Runs ON THE DEVICE MACHINE from .carry/ (pack.sh): the counters validation.
# 1. `counters_check ours`: our in-process range profiler on kernels with analytic counts.
# 2. `ncu --metrics ... counters_check plain`: Nsight Compute on the same kernels, in a
#    separate process (one CUPTI profiler client per process).
# 3. counters_compare.py: ours vs analytic vs ncu per metric, and the wall-time ratio.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=${OUT:-$root/device-out}
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
metrics=$(.carry/counters_check ours 2>/dev/null | python3 -c "import json,sys; print(','.join(json.load(sys.stdin)['metrics']))")

wall() {  # wall seconds of a command, its stdout to $1
  local file=$1; shift
  local t0 t1; t0=$(date +%s%N); "$@" > "$file" 2> "$file.err"; local rc=$?; t1=$(date +%s%N)
  [ $rc -eq 0 ] || { echo "failed ($rc): $*" >&2; cat "$file.err" >&2; }
  printf '%d.%03d\n' $(((t1 - t0) / 1000000000)) $(((t1 - t0) / 1000000 % 1000))
}
plain_s=$(wall "$out/plain.txt" .carry/counters_check plain)
ours_s=$(wall "$out/ours.json" .carry/counters_check ours)
ncu_s=$(wall "$out/ncu.csv" "$ncu" --clock-control none --cache-control none --profile-from-start off \
              --metrics "$metrics" --csv \
              --page raw \
              --print-units base .carry/counters_check plain)
python3 scripts/device/counters_compare.py "$out/ours.json" "$out/ncu.csv" \
  --plain-seconds "$plain_s" --ours-seconds "$ours_s" --ncu-seconds "$ncu_s"
