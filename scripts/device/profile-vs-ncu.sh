#!/usr/bin/env bash
# Runs ON THE DEVICE MACHINE from .carry/ (pack.sh): the per-kernel counters of
# `timeroof profile` against Nsight Compute on the same launches of a PyTorch
# program (issue 17: FLOPs exact, DRAM read and L2 within 1%), and what the
# counters cost.
#   PROFILE_MODEL=transformer|resnet50 (default transformer), PROFILE_LAUNCHES=N (default 40)
# 1. timeroof profile --every --count N --metrics LIST -- python3 profile_models.py ...
# 2. ncu -c N --metrics LIST on the same command (a separate process: one CUPTI
#    profiler client per process), with --cache-control none (caches as the
#    program left them, as timeroof's kernel replay measures) and all (its default),
#    clocks not locked (as timeroof: --clock-control none). timeroof runs twice: a
#    kernel whose traffic differs between its own runs is judged against that spread.
# 3. profile_counters_compare.py: launch by launch, names and metrics.
# 4. The wall time of the program untraced, traced without counters, and traced
#    with the default selection (the first launch of each configuration).
# PROFILE_MODE=iteration instead measures every kernel of one iteration with
# iteration replay (--iteration-range '<model> iteration' --skip 1: the counters of
# iteration 1's launches, taken in iterations 2..) against ncu's application replay
# of the same launches (the program rerun per pass, nothing restored: the same cache
# context; --launch-skip passes over iteration 0's kernels), and the wall times.
# Both tools run twice there, so each launch is judged against the larger of the
# two tools' own run-to-run spreads, and the summary says how many large launches
# each repeats within 1%.
set -uo pipefail
source "$(dirname "$0")/setup.sh"  # the repository root, $final (what comes back), $out (scratch)
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
model=${PROFILE_MODEL:-transformer}
launches=${PROFILE_LAUNCHES:-40}
metrics=sm__sass_thread_inst_executed_op_ffma_pred_on.sum,sm__sass_thread_inst_executed_op_fadd_pred_on.sum
metrics=$metrics,sm__sass_thread_inst_executed_op_fmul_pred_on.sum,sm__sass_thread_inst_executed_op_hfma_pred_on.sum
metrics=$metrics,sm__sass_thread_inst_executed_op_hadd_pred_on.sum,sm__sass_thread_inst_executed_op_hmul_pred_on.sum
metrics=$metrics,sm__ops_path_tensor_op_hgmma_src_fp16_sparsity_off.sum
metrics=$metrics,sm__ops_path_tensor_op_hmma_src_fp16_dst_fp32_sparsity_off.sum
metrics=$metrics,dram__bytes_read.sum,lts__t_sectors_srcunit_tex.sum,l1tex__t_bytes.sum,gpu__time_duration.sum
metrics=$metrics,lts__t_sectors_srcunit_tex_op_read.sum
program=(python3 examples/pytorch/profile_models.py --model "$model" --iterations 2 --warmup 1)
work=$out
status=0

wall() {  # seconds a command takes, its output to $1
  local file=$1; shift
  local t0 t1; t0=$(date +%s%N); "$@" > "$file" 2>&1; local rc=$?; t1=$(date +%s%N)
  [ $rc -eq 0 ] || { echo "failed ($rc): $*"; tail -5 "$file"; status=1; }
  printf '%d.%03d' $(((t1 - t0) / 1000000000)) $(((t1 - t0) / 1000000 % 1000))
}

if [ "${PROFILE_MODE:-}" = iteration ]; then
  program=(python3 examples/pytorch/profile_models.py --model "$model" --iterations 6 --warmup 1)
  iteration=(--iteration-range "$model iteration" --skip 1 --metrics "$metrics")
  ours_s=$(wall "$work/ours.txt" .carry/timeroof profile --db "$work/ours.db" "${iteration[@]}" -- "${program[@]}")
  .carry/timeroof export --db "$work/ours.db" --out "$work/ours.json" > /dev/null || status=1
  wall "$work/again.txt" .carry/timeroof profile --db "$work/again.db" "${iteration[@]}" -- "${program[@]}" > /dev/null
  .carry/timeroof export --db "$work/again.db" --out "$work/again.json" > /dev/null || status=1
  kernels=$(python3 -c "import json; r=json.load(open('$work/ours.json'))['runs'][0]; print(sum(e['kind']=='kernel_counters' for e in r['trace']))")
  ncu_s=$(wall "$work/ncu-app.csv" "$ncu" --target-processes all --replay-mode application --nvtx \
    --nvtx-include "$model iteration/" --launch-skip "$kernels" -c "$kernels" --cache-control none \
    --clock-control none --metrics "$metrics" --csv --page raw --print-units base "${program[@]}")
  wall "$work/ncu-app-again.csv" "$ncu" --target-processes all --replay-mode application --nvtx \
    --nvtx-include "$model iteration/" --launch-skip "$kernels" -c "$kernels" --cache-control none \
    --clock-control none --metrics "$metrics" --csv --page raw --print-units base "${program[@]}" > /dev/null
  plain_s=$(wall "$work/plain.txt" "${program[@]}")
  echo "== $model: every kernel of iteration 1 ($kernels), iteration replay ${ours_s} s," \
    "ncu --replay-mode application ${ncu_s} s, untraced ${plain_s} s"
  python3 scripts/device/profile_counters_compare.py "$work/ours.json" "$work/ncu-app.csv" \
    --again "$work/again.json" --ncu-again "$work/ncu-app-again.csv" | grep -v ' ok$' || status=1
  tail -2 "$work/ours.txt"
  tar czf "$final/profile-vs-ncu-$model-iteration.tgz" -C "$work" ours.json again.json ncu-app.csv \
    ncu-app-again.csv ours.txt plain.txt
  exit $status
fi

ours_s=$(wall "$work/ours.txt" .carry/timeroof profile --db "$work/ours.db" --every --count "$launches" \
  --metrics "$metrics" -- "${program[@]}")
.carry/timeroof export --db "$work/ours.db" --out "$work/ours.json" > /dev/null || status=1
# The same again: timeroof's own run-to-run spread per kernel and metric.
wall "$work/again.txt" .carry/timeroof profile --db "$work/again.db" --every --count "$launches" \
  --metrics "$metrics" -- "${program[@]}" > /dev/null
.carry/timeroof export --db "$work/again.db" --out "$work/again.json" > /dev/null || status=1
for cache in none all; do
  ncu_s=$(wall "$work/ncu-$cache.csv" "$ncu" --target-processes all -c "$launches" --cache-control "$cache" --clock-control none \
    --metrics "$metrics" --csv --page raw --print-units base "${program[@]}")
  echo "== $model: first $launches launches, timeroof ${ours_s} s, ncu --cache-control $cache ${ncu_s} s"
  python3 scripts/device/profile_counters_compare.py "$work/ours.json" "$work/ncu-$cache.csv" \
    --again "$work/again.json" || status=1
done
tail -2 "$work/ours.txt"

plain_s=$(wall "$work/plain.txt" "${program[@]}")
trace_s=$(wall "$work/trace.txt" .carry/timeroof profile --db "$work/trace.db" --no-counters -- "${program[@]}")
default_s=$(wall "$work/default.txt" .carry/timeroof profile --db "$work/default.db" -- "${program[@]}")
measured=$(.carry/timeroof export --db "$work/default.db" 2>/dev/null | python3 -c \
  "import json,sys; r=json.load(sys.stdin)['runs'][0]; print(sum(e['kind']=='kernel_counters' for e in r['trace']), sum(e['kind']=='kernel' for e in r['trace']))")
echo "== wall: untraced ${plain_s} s, traced ${trace_s} s, traced + default counters ${default_s} s (measured / kernels: $measured)"
for f in plain trace default; do echo "$f: $(grep -h 'iteration times' "$work/$f.txt" | tail -1)"; done
tail -1 "$work/default.txt"
tar czf "$final/profile-vs-ncu-$model.tgz" -C "$work" ours.json again.json ncu-none.csv ncu-all.csv ours.txt plain.txt trace.txt default.txt
exit $status
