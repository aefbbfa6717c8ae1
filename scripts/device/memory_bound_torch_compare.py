#!/usr/bin/env python3
"""PyTorch's time for a few pointwise, softmax and pooling shapes of timeroof's
memory-bound families (issue 18), to set beside the families' T_stream (printed
by gpu_memory_bound_test on the same machine). Runs ON THE GPU MACHINE; PyTorch
is a reference, never a dependency. Timed as T_stream is: calls back to back on
one stream between two CUDA events, per call, the median of 7 rounds of >= 20 ms.
Prints each shape's time and its minimum bytes per second; exit 0 (a benchmark).
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gemm_torch_compare import per_call_seconds  # noqa: E402  (T_stream's way of timing)


def main():
    bf16, fp16, fp32 = torch.bfloat16, torch.float16, torch.float32
    rand = lambda *shape, dtype: torch.rand(*shape, device="cuda", dtype=dtype) * 2 - 1
    a, b = rand(4096, 4096, dtype=bf16), rand(4096, 4096, dtype=bf16)
    big_a, big_b = rand(16384, 4096, dtype=fp32), rand(16384, 4096, dtype=fp32)
    up, gate = rand(4096, 11008, dtype=bf16), rand(4096, 11008, dtype=bf16)
    scores = rand(1, 4096, 32000, dtype=bf16)
    attn = rand(2048, 4096, dtype=bf16)
    pool_x = rand(128, 64, 112, 112, dtype=fp16).to(memory_format=torch.channels_last)
    gap_x = rand(128, 2048, 7, 7, dtype=fp16).to(memory_format=torch.channels_last)
    cases = [
        ("pointwise add bf16 4096x4096", lambda: torch.add(a, b), 3 * a.numel() * 2),
        ("pointwise add fp32 16384x4096", lambda: torch.add(big_a, big_b), 3 * big_a.numel() * 4),
        ("pointwise relu bf16 4096x4096", lambda: F.relu(a), 2 * a.numel() * 2),
        ("pointwise gelu bf16 4096x4096", lambda: F.gelu(a, approximate="tanh"), 2 * a.numel() * 2),
        ("pointwise silu bf16 4096x4096", lambda: F.silu(a), 2 * a.numel() * 2),
        ("pointwise silu_mul bf16 4096x11008", lambda: F.silu(gate) * up, 3 * up.numel() * 2),
        ("softmax bf16 1x4096x32000", lambda: torch.softmax(scores, -1), 2 * scores.numel() * 2),
        ("softmax bf16 2048x4096", lambda: torch.softmax(attn, -1), 2 * attn.numel() * 2),
        ("pool max 3x3/2 fp16 128x64x112x112",
         lambda: F.max_pool2d(pool_x, 3, 2, 1), (pool_x.numel() + pool_x.numel() // 4) * 2),
        ("pool avg 7x7 fp16 128x2048x7x7",
         lambda: F.avg_pool2d(gap_x, 7), (gap_x.numel() + gap_x.numel() // 49) * 2),
    ]
    print(f"PyTorch {torch.__version__} on {torch.cuda.get_device_name()}")
    for name, fn, min_bytes in cases:
        seconds = per_call_seconds(fn)
        print(f"torch {name:40s} {seconds * 1e6:9.2f} us  {min_bytes / seconds / 1e12:6.3f} TB/s of min bytes")


if __name__ == "__main__":
    main()
