#!/usr/bin/env bash
# Runs ON THE DEVICE MACHINE from .carry/ (pack.sh): is the L2-sector gap between
# our counters and ncu's on small cuDNN convs a counting error, or did the kernels
# do different work in a different L2 state?
# The same 18 fp16 convs ($REPEAT runs each), the catalog's fp16 plan plus the
# executed warp instructions (the same count in every run if a kernel's work is
# fixed), profiled five ways:
#   ours              in-process, the runner's L2 flush (a read of 2x L2) before each conv
#   ncu-kernel-all    ncu's default: kernel replay, its own cache invalidation before each pass
#   ncu-app-all       application replay, its own cache invalidation
#   ncu-app-ourflush  application replay, no invalidation (--cache-control none), the
#                     runner's flush before each conv: ncu in the state ours profiles in
#   ncu-app-all-ourflush  the runner's flush, then ncu's invalidation, before each conv
# Then ours against each ncu run (counters_compare.py), and the L2 sectors of all
# five side by side.
# Seen on an H100 (three calls, 2026-11-21): every run with ncu's invalidation
# (kernel or application replay, with or without our flush before it) has 1.4-4.5%
# fewer L2 sectors than ours on conv n4 K64, n8 K64 and n4 K128; ncu without it,
# after our flush, agrees with ours (114 of 114 values ok or within spread, largest
# 0.7-1.3%); the executed instructions agree within 0.3% in every run. Discarding the
# flush buffer's lines (PTX discard.global.L2: L2 left empty, checked with the
# counters) moved nothing: what ncu's invalidation resets is not reachable from a
# CUDA program.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=${OUT:-$root/device-out}
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
work=$(mktemp -d)
flags="--conv --repeat ${REPEAT:-5} --extra smsp__inst_executed.sum${COUNTERS_EXTRA:+,$COUNTERS_EXTRA}"

.carry/counters_check ours $flags > "$work/ours.json" 2> "$work/ours.err" ||
  { cat "$work/ours.err"; exit 1; }
metrics=$(python3 -c "import json,sys; print(','.join(json.load(open(sys.argv[1]))['metrics']))" \
          "$work/ours.json")
profile() {  # name, ncu options..., --, counters_check arguments...
  local name=$1; shift
  local options=()
  while [ "$1" != -- ]; do options+=("$1"); shift; done; shift
  "$ncu" --clock-control none --profile-from-start off "${options[@]}" --metrics "$metrics" \
    --csv --page raw --print-units base .carry/counters_check plain $flags "$@" \
    > "$work/$name.csv" 2> "$work/$name.err" || { echo "ncu $name failed"; tail "$work/$name.err"; }
}
profile ncu-kernel-all --
profile ncu-app-all --replay-mode application --
profile ncu-app-ourflush --replay-mode application --cache-control none -- --prelude flush
profile ncu-app-all-ourflush --replay-mode application -- --prelude flush

status=0
for name in ncu-kernel-all ncu-app-all ncu-app-ourflush ncu-app-all-ourflush; do
  echo "== ours against $name"
  python3 scripts/device/counters_compare.py "$work/ours.json" "$work/$name.csv" \
    --skip-kernels hbm_read_kernel | grep -E "lts__t_sectors|smsp__inst|^judged|^largest|validation" ||
    status=1
done

echo "== L2 sectors (lts__t_sectors_srcunit_tex) and warp instructions, medians over the runs"
python3 - "$work" <<'PY'
import json, statistics, sys
sys.path.insert(0, "scripts/device")
from counters_compare import read_ncu
work = sys.argv[1]
ours = json.load(open(f"{work}/ours.json"))
runs = {"ours": [r["values"] for r in ours["ranges"]]}
for name in ("ncu-kernel-all", "ncu-app-all", "ncu-app-ourflush", "ncu-app-all-ourflush"):
    runs[name] = read_ncu(f"{work}/{name}.csv", r"hbm_read_kernel")
steps = [r["step"] for r in ours["ranges"]]
names = list(dict.fromkeys(steps))
for metric in ("lts__t_sectors_srcunit_tex.sum", "smsp__inst_executed.sum"):
    print(f"{metric}; each other column: its value / ours - 1")
    print(f"  {'conv':<14} {'ours':>12} " + " ".join(f"{n:>21}" for n in runs if n != "ours"))
    for step in names:
        rows = [i for i, s in enumerate(steps) if s == step]
        med = {}
        for n, values in runs.items():
            got = [values[i].get(metric) for i in rows if i < len(values)]
            got = [v for v in got if isinstance(v, float)]
            med[n] = statistics.median(got) if got else None
        o = med["ours"]
        cols = " ".join(f"{(med[n] / o - 1) * 100:+20.3f}%" if med[n] and o else f"{'-':>21}"
                        for n in runs if n != "ours")
        print(f"  {step:<14} {o:12.6g} {cols}")
PY
cp "$work"/ours*.json "$work"/ncu-*.csv "$out/" 2>/dev/null
exit $status
