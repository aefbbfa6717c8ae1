#!/usr/bin/env bash
# Runs ON THE DEVICE MACHINE from .carry/ (pack.sh): how much of what a kernel's
# predecessor left in L2 each profiler lets it find (issue 17: three large PyTorch
# kernels of a ResNet-50 iteration read 1.5-3.1% less DRAM under timeroof's
# iteration replay than under ncu's application replay, --cache-control none).
# l2_residency.py runs producer/consumer pairs (a = x*2, then b = a+1) of known
# sizes; the consumer's DRAM read, as a share of what it reads, is what the
# profiler's work between the two kernels evicted. Each is profiled:
#   ours-iter, ours-iter-again   timeroof iteration replay (no replay, no restore)
#   ours-iter-blocking           the same with CUDA_LAUNCH_BLOCKING=1 (a host
#                                round trip between kernels, as ncu has)
#   ours-kernel                  timeroof kernel replay (--nvtx --every)
#   ncu-app, ncu-app-again       ncu --replay-mode application --cache-control none
#   ncu-kernel                   ncu kernel replay, --cache-control none
#   ncu-range                    ncu's application range replay of each "pair" NVTX
#                                range: producer and consumer as one range, nothing
#                                between them (the reference: the program alone)
# RESIDENCY_RESNET=1 also profiles the ResNet-50 iteration with iteration replay
# under CUDA_LAUNCH_BLOCKING=1 beside the plain one and ncu's application replay.
# Seen on an H200 (2026-11-29; tests/fixtures/l2-residency-h200-1129.tar.xz): at
# 24 MiB the consumer read 0.228-0.234 of its bytes from DRAM under timeroof, 0.259-
# 0.261 under ncu, and 0.249 (0.224-0.251 over 8 iterations) with nothing between
# the kernels; at 32 MiB 0.81-0.83, 0.83 and 0.79 (0.75-0.79); at 48 and 256 MiB
# all 1.000. Blocking launches changed nothing. docs/design.md has the reading.
set -uo pipefail
source "$(dirname "$0")/setup.sh"  # the repository root, $final (what comes back), $out (scratch)
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
metrics=dram__bytes_read.sum,lts__t_sectors_srcunit_tex_op_read.sum
metrics=$metrics,lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum,gpu__time_duration.sum
program=(python3 scripts/device/l2_residency.py)
kernels=14  # seven pairs an iteration
# Caches as the program left them, clocks not locked (as timeroof), raw CSV.
ncu_common=(--target-processes all --cache-control none --clock-control none --csv --page raw
            --print-units base)
status=0

ours() {  # name, [env ...] -- timeroof profile options
  local name=$1; shift
  local env=()
  while [ "$1" != -- ]; do env+=("$1"); shift; done; shift
  env "${env[@]}" .carry/timeroof profile --db "$out/$name.db" --metrics "$metrics" "$@" \
    -- "${program[@]}" > "$out/$name.txt" 2>&1 || { echo "$name failed"; tail -5 "$out/$name.txt"; status=1; }
  .carry/timeroof export --db "$out/$name.db" --out "$out/$name.json" > /dev/null || status=1
}
theirs() {  # name, ncu options
  local name=$1; shift
  "$ncu" "${ncu_common[@]}" --nvtx --nvtx-include "residency iteration/" --launch-skip $kernels \
    -c $kernels --metrics "$metrics" "$@" "${program[@]}" > "$out/$name.csv" 2> "$out/$name.err" ||
    { echo "$name failed"; tail -5 "$out/$name.err"; status=1; }
}
iteration=(--iteration-range 'residency iteration' --skip 1)
ours ours-iter -- "${iteration[@]}"
ours ours-iter-again -- "${iteration[@]}"
ours ours-iter-blocking CUDA_LAUNCH_BLOCKING=1 -- "${iteration[@]}"
ours ours-kernel -- --nvtx 'residency iteration' --skip $kernels --every --count $kernels
theirs ncu-app --replay-mode application
theirs ncu-app-again --replay-mode application
theirs ncu-kernel --replay-mode kernel
"$ncu" "${ncu_common[@]}" --replay-mode app-range --nvtx --nvtx-include "regex:^pair .*/" \
  --metrics "$metrics" "${program[@]}" > "$out/ncu-range.csv" 2> "$out/ncu-range.err" ||
  { echo "ncu-range failed"; tail -5 "$out/ncu-range.err"; head -c 600 "$out/ncu-range.csv"; }
python3 scripts/device/l2_residency_compare.py "$out" ours-iter ours-iter-again ours-iter-blocking \
  ours-kernel ncu-app ncu-app-again ncu-kernel --ranges ncu-range || status=1

if [ "${RESIDENCY_RESNET:-}" = 1 ]; then
  resnet=(python3 examples/pytorch/profile_models.py --model resnet50 --iterations 6 --warmup 1)
  big=$metrics,lts__t_sectors_srcunit_tex.sum
  for mode in plain blocking; do
    blocking=(); [ $mode = blocking ] && blocking=(CUDA_LAUNCH_BLOCKING=1)
    env "${blocking[@]}" .carry/timeroof profile \
      --db "$out/resnet-$mode.db" --iteration-range 'resnet50 iteration' --skip 1 --metrics "$big" \
      -- "${resnet[@]}" > "$out/resnet-$mode.txt" 2>&1 || status=1
    .carry/timeroof export --db "$out/resnet-$mode.db" --out "$out/resnet-$mode.json" > /dev/null
  done
  launches=$(python3 -c "import json; r=json.load(open('$out/resnet-plain.json'))['runs'][0]; print(sum(e['kind']=='kernel_counters' for e in r['trace']))")
  "$ncu" "${ncu_common[@]}" --replay-mode application --nvtx --nvtx-include "resnet50 iteration/" \
    --launch-skip "$launches" -c "$launches" --metrics "$big" "${resnet[@]}" > "$out/resnet-ncu.csv" 2>&1
  for mode in plain blocking; do
    echo "== ResNet-50 iteration, timeroof iteration replay ($mode) against ncu application replay"
    python3 scripts/device/profile_counters_compare.py "$out/resnet-$mode.json" "$out/resnet-ncu.csv" |
      grep -E "dram__bytes_read.*(FAIL|ok|spread)$|^verdicts"
  done
fi
tar czf "$final/l2-residency.tgz" -C "$out" $(cd "$out" && ls *.json *.csv *.txt *.err 2>/dev/null)
exit $status
