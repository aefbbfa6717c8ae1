#!/usr/bin/env bash
# Runs ON THE DEVICE MACHINE from .carry/ (pack.sh): the counters validation.
# 1. `counters_check ours`: our in-process range profiler on kernels with analytic counts.
# 2. `ncu --metrics ... counters_check plain`: Nsight Compute on the same kernels, in a
#    separate process (one CUPTI profiler client per process).
# 3. The same under ncu in the cache state ours profiles in: application replay,
#    --cache-control none, and the runner's L2 flush before each kernel.
# 4. counters_compare.py: ours vs analytic vs ncu per metric, and the wall-time ratio.
# Both start every kernel from a cold L2 (ncu: --cache-control all, its default).
# Cold is not one state: a few small convs issue 1.4-5.7% more L2 reads after our
# flush kernel than after ncu's invalidation (the same instructions, and ncu counts
# the same as we do in our state; scripts/device/counters-l2-state.sh). Such a value
# is judged `cache state`, not a failure, only where it agrees with ncu in our state.
# Every step runs $REPEAT times (default 3) on both sides: the comparison is of
# medians, beside each kernel's run-to-run spread (counters_compare.py says why).
# Then the same for 18 cuDNN fp16 convolutions (--conv): analytic Tensor-Core FLOPs
# and the speed ratio the counters issue asks for.
# The L2 sectors of small convs split by kind (they differ from ncu in read hits
# only, seen on an H200):
#   COUNTERS_EXTRA=lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum,\
#   lts__t_sectors_srcunit_tex_lookup_hit.sum,lts__t_sectors_srcunit_tex_lookup_miss.sum \
#     scripts/device/counters-vs-ncu.sh
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
  flag="--repeat ${REPEAT:-3}"; [ $workload = conv ] && flag="$flag --conv"
  # COUNTERS_EXTRA=m1,m2 adds metrics to both sides (investigations)
  [ -n "${COUNTERS_EXTRA:-}" ] && flag="$flag --extra $COUNTERS_EXTRA"
  plain_s=$(wall "$work/plain-$workload.txt" .carry/counters_check plain $flag)
  ours_s=$(wall "$work/ours-$workload.json" .carry/counters_check ours $flag)
  metrics=$(python3 -c "import json,sys; print(','.join(json.load(open(sys.argv[1]))['metrics']))" \
            "$work/ours-$workload.json")
  ncu_s=$(wall "$work/ncu-$workload.csv" "$ncu" --clock-control none --profile-from-start off \
                --metrics "$metrics" --csv --page raw --print-units base \
                .carry/counters_check plain $flag)
  "$ncu" --clock-control none --profile-from-start off --replay-mode application \
    --cache-control none --metrics "$metrics" --csv --page raw --print-units base \
    .carry/counters_check plain $flag --prelude flush > "$work/ncu-same-$workload.csv" \
    2> "$work/ncu-same-$workload.err" || { echo "ncu in our cache state failed" >&2; status=1; }
  echo "== $workload"
  python3 scripts/device/counters_compare.py "$work/ours-$workload.json" "$work/ncu-$workload.csv" \
    --ncu-same-state "$work/ncu-same-$workload.csv" --skip-kernels hbm_read_kernel \
    --plain-seconds "$plain_s" --ours-seconds "$ours_s" --ncu-seconds "$ncu_s" || status=1
  tar czf "$out/ncu-$workload.tgz" -C "$work" "ours-$workload.json" "ncu-$workload.csv" \
    "ncu-same-$workload.csv"
done

# Speed: the catalog set for the 18 convs once each, against ncu on the same 18
# kernels. `ours` is what the sweep runner does: one range per kernel, the convs
# batched into one collection. Also shown: one user range per conv in one collection,
# and one collection per conv (what the runner did before batching: CUPTI's per-pass
# setup paid per conv).
echo "== speed (18 cuDNN fp16 convs, once each)"
plain_s=$(wall "$work/plain-speed.txt" .carry/counters_check plain --conv)
ours_s=$(wall "$work/ours-speed.json" .carry/counters_check ours --conv)
range_s=$(wall "$work/ours-range-speed.json" .carry/counters_check ours-user-range --conv)
call_s=$(wall "$work/ours-call-speed.json" .carry/counters_check ours-per-call --conv)
metrics=$(python3 -c "import json,sys; print(','.join(json.load(open(sys.argv[1]))['metrics']))" \
          "$work/ours-speed.json")
ncu_s=$(wall "$work/ncu-speed.csv" "$ncu" --clock-control none --profile-from-start off \
              --metrics "$metrics" --csv --page raw --print-units base .carry/counters_check plain --conv)
python3 - "$plain_s" "$ours_s" "$range_s" "$call_s" "$ncu_s" "$work"/ours-speed.json \
          "$work"/ours-range-speed.json "$work"/ours-call-speed.json <<'PY'
import json, sys
plain, ours, user_range, call, ncu = map(float, sys.argv[1:6])
o, r, c = (json.load(open(f)) for f in sys.argv[6:9])
print(f"wall: plain {plain:.3f} s; ncu {ncu:.3f} s; ours (as the runner: per kernel, one batch) "
      f"{ours:.3f} s (collect {o['collect_seconds']:.3f} s, {o['passes']} passes); "
      f"one user range per conv {user_range:.3f} s (collect {r['collect_seconds']:.3f} s); "
      f"one collection per conv {call:.3f} s (collect {c['collect_seconds']:.3f} s)")
def ratio(t):
    return f"whole process {ncu / t:.2f}x, collection cost over the plain run {(ncu - plain) / max(t - plain, 1e-9):.2f}x"
print(f"speed ncu/ours: as the runner: {ratio(ours)}; user ranges: {ratio(user_range)}; "
      f"one collection per conv: {ratio(call)}")
for name, d in (("as the runner", o), ("one per conv", c)):
    print(f"collection phases (s), {name}: {d['phase_seconds']}")
PY
exit $status
