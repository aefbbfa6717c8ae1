#!/usr/bin/env python3
"""timeroof's GEMM points against PyTorch on the same shapes (issue 18: T_stream
within 5% of PyTorch's time where the same kernels run). Runs ON THE GPU MACHINE;
PyTorch is a reference, never a dependency.

    gemm_torch_compare.py EXPORT.json     (timeroof export of a `sweep gemm` run)

For each ok point without an epilogue in fp32, tf32, fp16 or bf16: PyTorch's
torch.matmul on the same m, n, k (and batch: torch.bmm), timed as timeroof's
T_stream is (calls back to back on one stream between two CUDA events, per call,
the median of 7 rounds of >= 20 ms). Both run cuBLAS, but PyTorch picks its own
layout and algorithm (cublasLt heuristics behind at::mm), so a row is the same
problem, not proven to be the same kernel: timeroof's algorithm is printed beside
it. Below ~50 us a PyTorch call is host-bound (its per-op overhead is ~20 us),
so the summary also gives the GPU-bound rows alone. Prints each ratio and a
summary; exit 0 (a benchmark, not a test).
"""
import json
import statistics
import sys

import torch

DTYPES = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16,
          "bf16": torch.bfloat16}


def per_call_seconds(fn, min_round_s=0.02, rounds=7):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    calls = 1
    while True:  # enough calls for one round to last min_round_s
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        if start.elapsed_time(end) * 1e-3 >= min_round_s or calls >= 1 << 16:
            break
        calls *= 2
    times = []
    for _ in range(rounds):
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e-3 / calls)
    return statistics.median(times)


def main():
    run = json.load(open(sys.argv[1]))["runs"][0]
    ratios, gpu_bound = [], []
    print(f"{'precision':9s} {'m x n x k':>20s} {'batch':>5s} {'timeroof us':>12s} "
          f"{'torch us':>10s} {'ratio':>7s}  timeroof algorithm")
    for p in run["points"]:
        par = p["params"]
        precision = par.get("precision")
        if p["status"] != "ok" or precision not in DTYPES or par.get("epilogue", "none") != "none":
            continue
        stream = (p.get("timing") or {}).get("stream") or {}
        if not stream.get("median_s"):
            continue
        m, n, k, batch = par["m"], par["n"], par["k"], par.get("batch", 1)
        torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
        dtype = DTYPES[precision]
        # timeroof's default layout: A transposed (k x m stored), B not (k x n stored).
        a = torch.randn(batch, k, m, device="cuda", dtype=dtype).transpose(1, 2)
        b = torch.randn(batch, k, n, device="cuda", dtype=dtype)
        if batch == 1:
            a2, b2 = a[0], b[0]
            fn = lambda: torch.mm(a2, b2)
        else:
            fn = lambda: torch.bmm(a, b)
        ours = stream["median_s"]
        theirs = per_call_seconds(fn)
        ratio = ours / theirs
        ratios.append(ratio)
        if min(ours, theirs) >= 50e-6:
            gpu_bound.append(ratio)
        print(f"{precision:9s} {f'{m} x {n} x {k}':>20s} {batch:5d} {ours * 1e6:12.1f} "
              f"{theirs * 1e6:10.1f} {ratio:7.3f}  {p.get('algorithm', '')[:60]}")
        del a, b
    for label, values in (("all", ratios), ("both >= 50 us", gpu_bound)):
        if values:
            within = sum(abs(r - 1) <= 0.05 for r in values)
            print(f"{label}: {len(values)} points, T_stream / PyTorch median "
                  f"{statistics.median(values):.3f}, range {min(values):.3f} .. {max(values):.3f}; "
                  f"within 5%: {within} of {len(values)}")


if __name__ == "__main__":
    main()
