#!/usr/bin/env bash
# Device check of the attention family's fp8 forward and the backward's padding
# mask (any seq_kv), one call within ~200 s. Packed by
#   /tmp/helpers/hpack.sh WORKTREE fp8attn tests/gpu/gpu_attention_test -- scripts/device/attention-fp8-check.sh
# and run as `bash .carry/fp8attn/attention-fp8-check.sh` with carry [".carry/fp8attn"].
# 1. gpu_attention_test (checks against the host reference, fp8 refusals, the
#    counted / analytic Tensor-Core FLOP ratios, CUDA-graph capture, the CLI),
#    the fp8 backward's test in a second process;
# 2. small sweeps through the CLI with counters into a store: fp8 against bf16
#    at LLaMA prefill shapes (none / causal), an odd-length fp8 forward (what
#    cuDNN 9.14 does with it is recorded, ok or unsupported), a padded backward
#    (seq 1000) beside its multiple of 128 (1024), the fp8 backward beside bf16;
# 3. one line per stored point: status, check, counted / analytic FLOPs, T_stream.
# Everything lands under $OUT (gpu.txt, gtest-*.log, sweep-*.log, points.json,
# summary.txt).
set -uo pipefail
c=$PWD/.carry/fp8attn
mkdir -p "$c/bin" && tar xJf "$c/bundle.tar.xz" -C "$c/bin"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export TIMEROOF_TEST_BINARY=$c/bin/timeroof
out=${OUT:-/tmp/fp8attn-out}
mkdir -p "$out"
tr=$c/bin/timeroof
summary=$out/summary.txt
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }

nvidia-smi --query-gpu=name,driver_version --format=csv | tee "$out/gpu.txt" | tee -a "$summary"
"$tr" info >"$out/info.txt" 2>&1
grep -iE "cudnn|compute capability|chip" "$out/info.txt" | head -4 | tee -a "$summary"

# 1. The GPU tests; the fp8 backward apart (a crash there loses nothing else).
gtest() {  # NAME TIMEOUT FILTER
  local t0=$(date +%s)
  timeout "$2" "$c/bin/gpu_attention_test" --gtest_filter="$3" >"$out/gtest-$1.log" 2>&1
  say "gpu_attention_test $1 rc=$? ($(($(date +%s) - t0)) s)"
  grep -E '^\[ +(OK|FAILED|SKIPPED) +\] .*ms\)$' "$out/gtest-$1.log" | tee -a "$summary"
  grep -E 'precision":"fp8"|"direction":"bwd"' "$out/gtest-$1.log" | grep -E 'relative error' |
    sed -E 's/ +/ /g' | cut -c1-300 | tee -a "$summary"
  grep -E '^(RATIO|FP8BWD)' "$out/gtest-$1.log" | sed -E 's/ +/ /g' | cut -c1-400 | tee -a "$summary"
  grep -E 'Failure|Expected|Which is|actual' "$out/gtest-$1.log" | head -30 | tee -a "$summary"
}
gtest main 95 '-*Fp8Backward*'
gtest fp8-bwd 35 '*Fp8Backward*'

# 2. The CLI sweeps with counters (each skipped past 175 s, to stay within ~200 s).
db=$out/fp8attn.db
sweep() {  # NAME ARGS...
  local name=$1
  shift
  if [ "$SECONDS" -gt 175 ]; then say "sweep $name skipped (time)"; return; fi
  local t0=$(date +%s)
  timeout 25 "$tr" sweep attention "$@" --db "$db" >"$out/sweep-$name.log" 2>&1
  say "sweep $name rc=$? ($(($(date +%s) - t0)) s): $*"
}
sweep prefill --batch 1 --heads 32 --seq-q 2048,4096 --head-dim 128 --mask none,causal \
  --precision fp8,bf16
sweep odd-fp8 --batch 2 --heads 8 --seq-q 77 --seq-kv 131 --head-dim 64 --precision fp8
sweep padded-bwd --batch 1 --heads 16 --seq-q 1000,1024 --head-dim 128 --mask none,causal \
  --direction bwd --precision bf16
sweep fp8-bwd --batch 1 --heads 32 --seq-q 2048 --head-dim 128 --mask none,causal \
  --direction bwd --precision fp8,bf16
"$tr" export --db "$db" --out "$out/points.json" >/dev/null 2>&1 || say "export failed"

# 3. One line per point.
python3 - "$out/points.json" <<'EOF' | tee -a "$summary"
import json, sys
doc = json.load(open(sys.argv[1]))
runs = doc["runs"] if isinstance(doc, dict) and "runs" in doc else doc
for run in runs:
    for p in run.get("points", []):
        par, prec = p.get("params", {}), p.get("precision", "?")
        label = (f"{par.get('direction')} {prec:4} B{par.get('batch')} H{par.get('heads')} "
                 f"sq{par.get('seq_q')} skv{par.get('seq_kv')} D{par.get('head_dim')} "
                 f"{par.get('mask')}")
        if p.get("status") != "ok":
            print(f"POINT {label}: {p.get('status')}: {p.get('reason', '')[:200]}")
            continue
        det = p.get("details", {})
        check = det.get("check", {})
        counter = {"bf16": "tensor_bf16_flops", "fp16": "tensor_fp16_flops",
                   "fp8": "tensor_fp8_flops"}.get(prec, "")
        counted = p.get("counters", {}).get(counter)
        ratio = f"x{counted / p['flops']:.4f}" if counted and p.get("flops") else "n/a"
        stream = p.get("timing", {}).get("stream") or {}
        t = stream.get("mean_s") or stream.get("min_s")
        t_us = f"{t * 1e6:.1f} us" if t else "n/a"
        rate = f"{p['flops'] / t / 1e12:.0f} TFLOP/s" if t and p.get("flops") else ""
        extra = ""
        if "fp8" in det:
            extra += " fp8 " + json.dumps(det["fp8"], separators=(",", ":"))
        if "padding_mask" in det:
            extra += f" padding_mask masked_keys {det['padding_mask'].get('masked_keys_in_last_tile')}"
        kernels = sorted({k.get("name", "")[:70] for k in p.get("kernels", [])})
        err = check.get("relative_error")
        err = f"{err:.3g}" if isinstance(err, (int, float)) else str(err)
        print(f"POINT {label}: check {check.get('status')} err {err}"
              f" counted/analytic {counter} {ratio}, T_stream {t_us} {rate}, {p.get('algorithm')}"
              f"{extra}; kernels {kernels}")
EOF
say "done in $SECONDS s"
