#!/usr/bin/env bash
# Runs ON THE DEVICE MACHINE from .carry/ (see pack.sh): `timeroof ceilings --quick`
# once and the full set twice, exports them, times PyTorch's copies
# (framework_copy.py), and prints the targets of the
# ceilings issue as ratios (scripts/device/ceilings_targets.py). Exports land in
# $OUT (ceilings-run1.json, ceilings-run2.json) for fixtures.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=${OUT:-$root/device-out}
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
db=$(mktemp -d)/ceilings.db
# Wall seconds and exit code of a command whose output is not needed.
seconds() {
  local t0 t1 rc
  t0=$(date +%s%N); "$@" > /dev/null; rc=$?; t1=$(date +%s%N)
  printf '%d.%03d %d\n' $(((t1 - t0) / 1000000000)) $(((t1 - t0) / 1000000 % 1000)) "$rc"
}
read -r quick_s quick_rc < <(seconds .carry/timeroof ceilings --quick --db "$db")
read -r full1_s full1_rc < <(seconds .carry/timeroof ceilings --db "$db")
read -r full2_s full2_rc < <(seconds .carry/timeroof ceilings --db "$db")
.carry/timeroof export 2 --db "$db" --out "$out/ceilings-run1.json"
.carry/timeroof export 3 --db "$db" --out "$out/ceilings-run2.json"
.carry/timeroof runs --db "$db"
# What a framework's own copies reach in the same call: the hbm_copy target.
python3 scripts/device/framework_copy.py > "$out/framework-copy.json" || echo "{}" > "$out/framework-copy.json"
echo "wall time: quick ${quick_s}s (rc $quick_rc), full ${full1_s}s (rc $full1_rc), ${full2_s}s (rc $full2_rc)"
python3 scripts/device/ceilings_targets.py "$out/ceilings-run1.json" "$out/ceilings-run2.json" \
  --quick-seconds "$quick_s" --full-seconds "$full1_s" --framework-copy "$out/framework-copy.json"
