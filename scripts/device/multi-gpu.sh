#!/usr/bin/env bash
# Runs ON A MULTI-GPU DEVICE MACHINE (nvidia-h100-x2 / nvidia-h200-x2 and up), in
# the repository root, from binaries packed by scripts/device/pack.sh into .carry/.
# Issue 21's figures: the --devices tests, every GPU's roofs and the interconnect
# roofs (with PyTorch's P2P copy as the reference), and the default sweeps on one
# GPU against all of them (the ratio must be <= 0.55 on two GPUs).
# Everything lands in $OUT/multi-gpu-logs.tgz, with summary.txt beside it.
# Usage: multi-gpu.sh [ROUNDS] (default 1): the one-GPU / all-GPU sweep pair is
# repeated, interleaved, ROUNDS times, since the VM's host speed moves between runs.
# SKIP_TESTS=1 skips the gtests, SKIP_TORCH=1 the PyTorch P2P reference;
# NO_COUNTERS_PAIR=1 adds the pair timing-only.
set -uo pipefail
source "$(dirname "$0")/setup.sh"
tr=.carry/timeroof
summary=$out/summary.txt
# Each line of the summary also refreshes the archive, so a call cut off by its
# time limit still brings back what was done.
save() { tar czf "$final/multi-gpu-logs.tgz" -C "$out" --exclude='*.db' . 2>/dev/null; cp "$summary" "$final/"; }
say() { echo "$*" | tee -a "$summary"; save; }
# timed CMD...: runs it; sets t (wall seconds) and rc.
timed() {
  local s; s=$(date +%s.%N); "$@"; rc=$?
  t=$(awk -v a="$s" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
}

{
  echo "== machine"; date -u; hostname
  nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm,power.limit --format=csv
  nvidia-smi topo -m
  ls /usr/local/lib/python3*/dist-packages/nvidia/nccl/lib/ 2>/dev/null
} > "$out/machine.txt" 2>&1
cat "$out/machine.txt"
say "== $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | tr -s ' ')"

if [ -z "${SKIP_TESTS:-}" ]; then  # SKIP_TESTS=1: the figures alone
say "== gtest: the --devices and shard tests, and three sweeps sharing GPU 0's counters"
for test in gpu_devices_test gpu_cli_shard_test gpu_cli_busy_counters_test; do
  [ -x ".carry/tests/$test" ] || continue
  timeout 240 ".carry/tests/$test" > "$out/$test.log" 2>&1
  say "$test rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) |^sweep [0-9]|waited' "$out/$test.log" | tr '\n' ' ')"
done
fi

say "== ceilings --devices all (every GPU's roofs at once, then the interconnect)"
timed timeout 400 $tr ceilings --devices all --db "$out/all.db" \
  > "$out/ceilings.txt" 2> "$out/ceilings.err"
say "ceilings: ${t}s rc=$rc"
$tr export --db "$out/all.db" > "$out/roofs.json"
python3 - "$out/roofs.json" <<'PY' | tee -a "$summary"
import json, sys
doc = json.load(open(sys.argv[1]))
for r in doc["runs"]:
    m = r["machine"]
    by = {c["name"]: c for c in m["ceilings"]}
    core = ", ".join(f"{n} {by[n]['measured']/1e12:.2f}T" for n in ("hbm_copy", "l2_read", "tensor_fp16", "h2d_pinned") if n in by)
    print(f"GPU {m['gpu']['index']} {m['gpu']['name']}: {core}")
    for c in m["ceilings"]:
        if c["name"].startswith(("p2p_", "allreduce")):
            unit = "us" if c["unit"] == "s" else "GB/s"
            v = c["measured"] * (1e6 if c["unit"] == "s" else 1e-9)
            print(f"  {c['name']}: {v:.2f} {unit} spread {c['spread']:.3f} x{c['repeats']}")
    for s in m["skipped"]:
        if s["name"].startswith(("p2p", "allreduce")): print(f"  skipped {s['name']}: {s['reason']}")
PY

if [ -z "${SKIP_TORCH:-}" ]; then  # SKIP_TORCH=1: no PyTorch P2P reference
say "== PyTorch P2P copy reference (same call, tensor.copy_ across GPUs, 256 MiB)"
timeout 120 python3 - <<'PY' 2>&1 | tee -a "$summary"
import torch, time
n = torch.cuda.device_count()
for a in range(n):
    for b in range(n):
        if a == b: continue
        src = torch.empty(256 << 20, dtype=torch.uint8, device=f"cuda:{a}")
        dst = torch.empty(256 << 20, dtype=torch.uint8, device=f"cuda:{b}")
        for _ in range(3): dst.copy_(src)
        torch.cuda.synchronize(a); torch.cuda.synchronize(b)
        best = []
        for _ in range(20):
            s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
            with torch.cuda.device(a):
                s.record(); dst.copy_(src); e.record()
            e.synchronize(); best.append(s.elapsed_time(e) / 1e3)
        best.sort()
        print(f"torch copy_ {a}->{b}: {(256 << 20) / best[len(best)//2] / 1e9:.1f} GB/s (median of 20)")
PY
fi

say "== default sweeps: one GPU, then --devices all (same machine, same call)"
rounds=${1:-1}
for round in $(seq "$rounds"); do
for family in conv2d lstm; do
  timed timeout 300 $tr sweep $family --device 0 --db "$out/one.db" \
    > /dev/null 2> "$out/one-$family-$round.err"
  t1=$t rc1=$rc
  timed timeout 300 $tr sweep $family --devices all --db "$out/all.db" \
    > /dev/null 2> "$out/all-$family-$round.err"
  say "$family: one GPU ${t1}s rc=$rc1; all GPUs ${t}s rc=$rc; ratio $(awk -v a="$t" -v b="$t1" 'BEGIN { printf "%.3f", a / b }')"
  grep -h "point(s) measured" "$out/one-$family-$round.err" "$out/all-$family-$round.err" \
    | tee -a "$summary"
done
done
if [ -n "${NO_COUNTERS_PAIR:-}" ]; then  # the same pair timing-only: what counters add
for family in conv2d lstm; do
  timed timeout 300 $tr sweep $family --device 0 --no-counters --db "$out/one-nc.db" \
    > /dev/null 2> "$out/one-nc-$family.err"
  t1=$t rc1=$rc
  timed timeout 300 $tr sweep $family --devices all --no-counters --db "$out/all-nc.db" \
    > /dev/null 2> "$out/all-nc-$family.err"
  say "$family --no-counters: one GPU ${t1}s rc=$rc1; all GPUs ${t}s rc=$rc; ratio $(awk -v a="$t" -v b="$t1" 'BEGIN { printf "%.3f", a / b }')"
  grep -h "point(s) measured" "$out/one-nc-$family.err" "$out/all-nc-$family.err" | tee -a "$summary"
done
fi
$tr report --db "$out/all.db" --out "$out/report" > /dev/null 2> "$out/report.err"
say "report rc=$? $(grep -o 'interconnect [0-9.]* GB/s' "$out/report/index.html" 2>/dev/null | sort | uniq -c | tr '\n' ' ')"
$tr export --db "$out/all.db" > "$out/all.json"
$tr export --db "$out/one.db" > "$out/one.json"
# Per step (runner_seconds), summed over the points: where a worker's time goes
# against the one-GPU run's.
python3 - "$out/one.json" "$out/all.json" <<'PY' | tee -a "$summary"
import json, sys
from collections import Counter
for path in sys.argv[1:]:
    for r in json.load(open(path))["runs"]:
        if not r["points"]: continue
        steps = Counter()
        for p in r["points"]:
            gpu = p["details"].get("gpu", {}).get("index", "-")
            for k, v in p["details"].get("runner_seconds", {}).items(): steps[(gpu, k)] += v
        name = r["spec"]["sweeps"][0]["name"]
        print(path.split("/")[-1], name, r["started_at"][11:19],
              " ".join(f"gpu{g}:{k}={v:.1f}" for (g, k), v in sorted(steps.items(), key=str)))
PY
save
