#!/usr/bin/env python3
"""timeroof's layernorm / batchnorm points against PyTorch on the same shapes,
kernel by kernel. Runs ON THE GPU MACHINE; PyTorch is a reference, never a dependency.

    norm_torch_compare.py EXPORT.json ... [--json OUT]   (`timeroof export` of norm sweeps)

For each ok forward point: F.layer_norm / F.rms_norm (weight and bias in the data
type, as a module keeps them; timeroof's are fp32) and F.batch_norm (channels_last,
fp32 running stats, training or eval) on the same shape and dtype, no tensor requiring grad.
Timed and compared by torch_reference.PointComparison (T_stream's way of timing,
the kernels each side ran, the verdict). PyTorch runs its own layer_norm / rms_norm
kernels and cuDNN's or its own batch norm, timeroof cuDNN's graph norm engines (and
the legacy cudnnBatchNormalizationForwardInference), so the kernel lists say which
rows compare the same kernel.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_reference as ref  # noqa: E402


def layernorm_call(torch, par, dtype):
    F = torch.nn.functional
    rows, hidden = par["batch"] * par["seq"], par["hidden"]
    x = torch.rand(rows, hidden, device="cuda", dtype=dtype) * 2 - 1
    w = torch.rand(hidden, device="cuda", dtype=dtype) + 0.5
    b = torch.rand(hidden, device="cuda", dtype=dtype) - 0.5
    if par["kind"] == "layer":
        return lambda: F.layer_norm(x, (hidden,), w, b, 1e-5)
    return lambda: F.rms_norm(x, (hidden,), w, 1e-5)


def batchnorm_call(torch, par, dtype):
    n, c, h, w = par["batch"], par["channels"], par["height"], par["width"]
    x = (torch.rand(n, c, h, w, device="cuda", dtype=dtype) * 2 - 1).to(memory_format=torch.channels_last)
    weight = torch.rand(c, device="cuda") + 0.5
    bias = torch.rand(c, device="cuda") - 0.5
    mean = torch.rand(c, device="cuda") - 0.5
    var = torch.rand(c, device="cuda") + 0.5
    training = par["phase"] == "training"
    return lambda: torch.nn.functional.batch_norm(x, mean, var, weight, bias, training, 0.1, 1e-5)


def rows(torch, comparison, points):
    dtypes = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
    for p in points:
        par, precision = p["params"], ref.point_precision(p)
        if "hidden" in par:
            shape = f"{par['batch'] * par['seq']}x{par['hidden']}"
            call = layernorm_call
        else:
            shape = f"{par['batch']}x{par['channels']}x{par['height']}x{par['width']}"
            call = batchnorm_call
        label = f"{p['op']} {precision} {shape}"
        if par.get("direction") != "fwd":
            comparison.skip(label, "backward: forward points only")
            continue
        # No tensor requires grad: nothing for autograd to record (no no_grad per call).
        comparison.compare(label, p, [("", call(torch, par, dtypes[precision]))])


if __name__ == "__main__":
    sys.exit(ref.comparison_main("norms: timeroof (cuDNN) vs PyTorch F.layer_norm / rms_norm / batch_norm",
                                 lambda op: op.startswith(("layernorm", "rmsnorm", "batchnorm")), rows))
