#!/usr/bin/env bash
# Runs ON THE DEVICE MACHINE from .carry/ (pack.sh): records issue 17's profile fixture
# for the CPU tests of a profile's model, report and Perfetto export on real counters:
# the GPU's roofs (`timeroof ceilings --quick`), then `timeroof profile` of
# examples/pytorch/profile_models.py --model resnet50 (batch 8, fp16, 2 iterations after
# 1 warm-up, an NVTX range per module) with per-kernel counters (the default selection:
# the first launch of each kernel configuration) on those roofs. Brings back both runs'
# export as $OUT/$FIXTURE (default profile-resnet50-h200.json.gz; name the GPU) and, in
# one archive, the console output, `analyze`, the report and the Perfetto trace.
set -uo pipefail
source "$(dirname "$0")/setup.sh"
fixture=${FIXTURE:-profile-resnet50-h200.json.gz}
db=$out/profile.db
status=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$out/machine.txt" 2>&1
python3 -c "import torch, torchvision; print('torch', torch.__version__, 'CUDA', torch.version.cuda, 'torchvision', torchvision.__version__)" >> "$out/machine.txt" 2>&1
cat "$out/machine.txt"

step() {  # step NAME COMMAND...: runs it, its output in $out/NAME.txt, says how it ended
  local name=$1 t0 rc
  shift
  t0=$(date +%s)
  "$@" > "$out/$name.txt" 2>&1
  rc=$?
  echo "$name: exit $rc in $(( $(date +%s) - t0 )) s"
  tail -3 "$out/$name.txt"
  [ "$rc" -eq 0 ] || status=1
}
step ceilings .carry/timeroof ceilings --quick --db "$db"
step profile .carry/timeroof profile --db "$db" --name resnet50 -- \
  python3 examples/pytorch/profile_models.py --model resnet50 --batch 8 --iterations 2 --warmup 1
step analyze .carry/timeroof analyze 2 --db "$db"
step report .carry/timeroof report 2 --db "$db" --out "$out/report"
step perfetto .carry/timeroof export 2 --db "$db" --perfetto "$out/trace-perfetto.json"
step export .carry/timeroof export 1 2 --db "$db" --out "$final/$fixture"
ls -l "$final/$fixture"
tar czf "$final/profile-fixture-logs.tgz" -C "$out" machine.txt ceilings.txt profile.txt \
  analyze.txt report.txt perfetto.txt export.txt report trace-perfetto.json
exit $status
