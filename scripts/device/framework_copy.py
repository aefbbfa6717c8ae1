#!/usr/bin/env python3
"""The HBM copy rates a framework reaches on this GPU, for the ceilings benchmark's
hbm_copy target (ceilings_targets.py --framework-copy): PyTorch's copy_ of a 2 GiB
buffer (contiguous, same dtype: cudaMemcpyAsync device to device) and an
element-wise kernel writing another buffer (torch.mul by 1: PyTorch's vectorized
copy-like kernel), each the best median of 5 windows of 20 calls timed with CUDA
events, bytes = read + write. Runs ON THE GPU MACHINE; timeroof never depends on
PyTorch. Prints one JSON object: {"memcpy_d2d": B/s, "elementwise": B/s}, or
{} where PyTorch or a GPU is missing."""
import json
import statistics


def rate(torch, call, nbytes):
    for _ in range(5):
        call()
    torch.cuda.synchronize()
    medians = []
    for _ in range(5):
        times = []
        for _ in range(20):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            call()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
        medians.append(statistics.median(times))
    return 2 * nbytes / min(medians)


def main():
    try:
        import torch
    except ImportError:
        print("{}")
        return
    if not torch.cuda.is_available():
        print("{}")
        return
    count = 2**30  # fp16 elements: 2 GiB, far beyond the L2
    src = torch.randn(count, dtype=torch.float16, device="cuda")
    dst = torch.empty_like(src)
    nbytes = src.numel() * src.element_size()
    print(json.dumps({
        "memcpy_d2d": rate(torch, lambda: dst.copy_(src), nbytes),
        "elementwise": rate(torch, lambda: torch.mul(src, 1, out=dst), nbytes),
        "gpu": torch.cuda.get_device_name(),
        "torch": torch.__version__,
    }))


if __name__ == "__main__":
    main()
