#!/usr/bin/env bash
# Runs ON THE DEVICE MACHINE, in the repository root: what tracing alone costs a
# PyTorch iteration per `timeroof profile --api` choice (issue 17, target < 10%),
# through tracing_cost.py (beside this script; its options pass through, e.g.
# --rounds 3 --budget-s 150). TIMEROOF names the binary (default .carry/timeroof,
# as scripts/device/pack.sh lays it out; libtimeroof_inject.so beside it), WORKLOAD
# the script (default examples/pytorch/profile_models.py). The default workload (batch
# 16) is host-bound; a step the GPU bounds, where the 10% is judged (docs/design.md):
#   tracing-cost.sh --model resnet50 --workload-args="--batch 64 --train" --cpus 8-11
# The tables come back in $OUT/tracing-cost.txt (appended).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=${TIMEROOF_SOURCE_DIR:-$PWD}
timeroof=${TIMEROOF:-$root/.carry/timeroof}
out=${OUT:-$root}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
  python3 -c "import torch, torchvision; print('torch', torch.__version__, 'CUDA', torch.version.cuda, 'torchvision', torchvision.__version__)"
  python3 "$here/tracing_cost.py" --timeroof "$timeroof" \
    --workload "${WORKLOAD:-$root/examples/pytorch/profile_models.py}" "$@"
} 2>&1 | tee -a "$out/tracing-cost.txt"
exit "${PIPESTATUS[0]}"
