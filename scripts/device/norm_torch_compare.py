#!/usr/bin/env python3
"""timeroof's layernorm / batchnorm points against PyTorch on the same shapes.
Runs ON THE GPU MACHINE; PyTorch is a reference, never a dependency.

    norm_torch_compare.py EXPORT.json [EXPORT.json ...]   (`timeroof export` of sweeps)

For each ok forward point: F.layer_norm / F.rms_norm (weight and bias in the data
type, as a module keeps them; timeroof's are fp32) and F.batch_norm (channels_last,
fp32 running stats, training or eval) on the same shape and dtype, timed as timeroof's T_stream
is (gemm_torch_compare.per_call_seconds: calls back to back between two CUDA
events, median of 7 rounds of >= 20 ms). PyTorch runs its own kernels (its native
layer_norm / rms_norm, cuDNN or native batch norm), so a row compares the same
problem, not the same kernel. Prints each ratio and a summary; exit 0.
"""
import json
import os
import statistics
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gemm_torch_compare import per_call_seconds  # noqa: E402

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def layernorm_call(par, dtype):
    rows, hidden = par["batch"] * par["seq"], par["hidden"]
    x = torch.rand(rows, hidden, device="cuda", dtype=dtype) * 2 - 1
    w = torch.rand(hidden, device="cuda", dtype=dtype) + 0.5
    b = torch.rand(hidden, device="cuda", dtype=dtype) - 0.5
    if par["kind"] == "layer":
        return lambda: F.layer_norm(x, (hidden,), w, b, 1e-5)
    return lambda: F.rms_norm(x, (hidden,), w, 1e-5)


def batchnorm_call(par, dtype):
    n, c, h, w = par["batch"], par["channels"], par["height"], par["width"]
    x = (torch.rand(n, c, h, w, device="cuda", dtype=dtype) * 2 - 1).to(
        memory_format=torch.channels_last)
    weight = torch.rand(c, device="cuda") + 0.5
    bias = torch.rand(c, device="cuda") - 0.5
    mean = torch.rand(c, device="cuda") - 0.5
    var = torch.rand(c, device="cuda") + 0.5
    training = par["phase"] == "training"
    return lambda: F.batch_norm(x, mean, var, weight, bias, training, 0.1, 1e-5)


def main():
    rows = []
    print(f"{'op':26s} {'prec':5s} {'shape':>22s} {'timeroof us':>12s} {'torch us':>10s} "
          f"{'ratio':>7s}  timeroof GB/s")
    for path in sys.argv[1:]:
        for run in json.load(open(path))["runs"]:
            for p in run["points"]:
                par = p["params"]
                if p["status"] != "ok" or par.get("direction") != "fwd":
                    continue
                stream = (p.get("timing") or {}).get("stream") or {}
                if not stream.get("median_s"):
                    continue
                dtype = DTYPES[p["precision"]]
                if "hidden" in par:
                    fn = layernorm_call(par, dtype)
                    shape = f"{par['batch'] * par['seq']} x {par['hidden']}"
                else:
                    fn = batchnorm_call(par, dtype)
                    shape = f"{par['batch']}x{par['channels']}x{par['height']}x{par['width']}"
                with torch.no_grad():
                    theirs = per_call_seconds(fn)
                ours = stream["median_s"]
                rows.append(ours / theirs)
                print(f"{p['op']:26s} {p['precision']:5s} {shape:>22s} {ours * 1e6:12.1f} "
                      f"{theirs * 1e6:10.1f} {ours / theirs:7.3f}  "
                      f"{p['min_bytes'] / ours / 1e9:.0f}")
                torch.cuda.empty_cache()
    if rows:
        print(f"{len(rows)} points: T_stream / PyTorch median {statistics.median(rows):.3f}, "
              f"range {min(rows):.3f} .. {max(rows):.3f}")


if __name__ == "__main__":
    main()
