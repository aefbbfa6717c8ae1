#!/usr/bin/env python3
"""timeroof's pointwise, softmax and pool points against PyTorch on the same
shapes, kernel by kernel (issue 18). Runs ON THE GPU MACHINE; PyTorch is a
reference, never a dependency.

    memory_bound_torch_compare.py EXPORT.json ... [--json OUT]
        (`timeroof export` of pointwise / softmax / pool sweeps)

For each ok point: torch.add / mul, F.relu, F.gelu (tanh form, as timeroof's),
F.silu, F.silu(a) * b (two kernels in PyTorch, one in timeroof), torch.softmax over
the last dimension, F.max_pool2d / F.avg_pool2d (count_include_pad, channels_last:
timeroof's NHWC) on the same shape and type. Timed and compared by
torch_reference.PointComparison (T_stream's way of timing, the kernels each side
ran, the verdict). timeroof runs its own kernels (or cuDNN's with implementation
cudnn), PyTorch its own, so the kernels differ by design: the ratios say how near
each side gets to the memory roof.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_reference as ref  # noqa: E402


def rand(torch, *shape, dtype):
    return torch.rand(*shape, device="cuda", dtype=dtype) * 2 - 1


def pointwise_call(torch, par, dtype):
    F = torch.nn.functional
    a, b = (rand(torch, par["batch"], par["elements"], dtype=dtype) for _ in range(2))
    return {"add": lambda: torch.add(a, b), "mul": lambda: torch.mul(a, b), "relu": lambda: F.relu(a),
            "gelu": lambda: F.gelu(a, approximate="tanh"), "silu": lambda: F.silu(a),
            "silu_mul": lambda: F.silu(a) * b}[par["op"]]


def softmax_call(torch, par, dtype):
    x = rand(torch, par["batch"], par["rows"], par["columns"], dtype=dtype)
    return lambda: torch.softmax(x, -1)


def pool_call(torch, par, dtype):
    F = torch.nn.functional
    x = rand(torch, par["batch"], par["channels"], par["height"], par["width"], dtype=dtype)
    x = x.contiguous(memory_format=torch.channels_last)
    window, stride, pad = par["window"], par["stride"], par["pad"]
    if par["mode"] == "max":
        return lambda: F.max_pool2d(x, window, stride, pad)
    return lambda: F.avg_pool2d(x, window, stride, pad, count_include_pad=True)


def rows(torch, comparison, points):
    dtypes = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
    for p in points:
        par, precision, op = p["params"], ref.point_precision(p), p["op"]
        if op.startswith("pointwise"):
            shape, call = f"{par['batch']}x{par['elements']}", pointwise_call
        elif op == "softmax":
            shape, call = f"{par['batch']}x{par['rows']}x{par['columns']}", softmax_call
        else:
            shape = (f"{par['batch']}x{par['channels']}x{par['height']}x{par['width']} "
                     f"{par['window']}/{par['stride']}/{par['pad']}")
            call = pool_call
        label = f"{op} {precision} {shape} {par.get('implementation', 'own')}"
        # No tensor requires grad: nothing for autograd to record (no no_grad per call).
        comparison.compare(label, p, [("", call(torch, par, dtypes[precision]))])


if __name__ == "__main__":
    sys.exit(ref.comparison_main("memory-bound: timeroof (own kernels) vs PyTorch",
                                 lambda op: op.startswith(("pointwise", "softmax", "pool")), rows))
