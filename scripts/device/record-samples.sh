#!/usr/bin/env bash
# Runs ON THE DEVICE MACHINE from .carry/ (pack.sh): records a bundled sample
# (`timeroof run`, i.e. roofs + default sweeps + report, then `timeroof run --model
# $MODEL`, default resnet50, on the same roofs) as $OUT/$SAMPLE
# (default sample-run.json.gz, the H200's; sample-run-h100.json.gz on an H100) and,
# unless BATCH_FIXTURE is empty, the batch fixture (tests/fixtures/conv2d-batch-h200.json),
# and brings back the exports, the run's console output and its report as an archive.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=${OUT:-$root/device-out}
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
work=$(mktemp -d)
status=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$work/machine.txt"

t0=$(date +%s)
.carry/timeroof run --db "$work/run.db" --out "$work/report" > "$work/run.out" 2> "$work/run.err"
rc=$?
echo "timeroof run: exit $rc in $(( $(date +%s) - t0 )) s; last lines:"; tail -4 "$work/run.err"; tail -2 "$work/run.out"
[ $rc -eq 0 ] || [ $rc -eq 3 ] || status=1
# One model table beside the default sweeps (issue 18), on the roofs just measured.
model=${MODEL-resnet50}
if [ -n "$model" ]; then
  t0=$(date +%s)
  .carry/timeroof run --model "$model" --db "$work/run.db" > "$work/model.out" 2> "$work/model.err"
  rc=$?
  echo "timeroof run --model $model: exit $rc in $(( $(date +%s) - t0 )) s"; tail -3 "$work/model.out"
  [ $rc -eq 0 ] || [ $rc -eq 3 ] || status=1
fi
# gzip: an export of every family passes the device tool's 16 MiB per file, and
# the bundled samples are read as they come back.
.carry/timeroof export --db "$work/run.db" --out "$out/${SAMPLE:-sample-run.json.gz}" || status=1

batch=${BATCH_FIXTURE-conv2d-batch-h200.json}
touch "$work/batch.err"
if [ -n "$batch" ]; then
  t0=$(date +%s)
  .carry/timeroof sweep conv2d --batch 1..1024:x2 --db "$work/batch.db" 2> "$work/batch.err"
  echo "batch sweep: exit $? in $(( $(date +%s) - t0 )) s"; tail -1 "$work/batch.err"
  .carry/timeroof export --db "$work/batch.db" --out "$out/$batch" || status=1
fi

touch "$work/model.out" "$work/model.err"
tar czf "$out/run-report.tgz" -C "$work" machine.txt run.out run.err model.out model.err report batch.err
exit $status
