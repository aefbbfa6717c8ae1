#!/usr/bin/env python3
"""What the host pays per PyTorch operator, the counterpart of examples/launch_cost for
`timeroof profile`'s tracing cost (issue 17; scripts/device/launch_cost.py runs it
untraced and under each --api choice with --program): a launch-bound PyTorch program
pays this on every kernel, the dispatcher and the CUDA calls it makes around the launch
included, where examples/launch_cost times bare launches.

    launch_cost.py [--batches B] [--batch-launches L]

Phases, each B batches of L in-place adds to a one-element tensor (one kernel each) on
the current stream; only the issuing is timed, and a synchronize ends each batch
outside the timed part:
  torch_add       x.add_(1)
  torch_add_nvtx  the same inside torch.cuda.nvtx.range_push/pop, as a per-module range
Each prints examples/launch_cost's line:
  launch_cost PHASE: MEDIAN us per launch (p10 P10, p90 P90, B batches of L)
Needs torch and a CUDA GPU.
"""
import argparse
import statistics
import time

import torch


def run_phase(name, x, batches, per_batch):
    nvtx = name.endswith("_nvtx")
    per_launch_us = []
    for _ in range(batches):
        start = time.perf_counter()
        for _ in range(per_batch):
            if nvtx:
                torch.cuda.nvtx.range_push("add")
            x.add_(1)
            if nvtx:
                torch.cuda.nvtx.range_pop()
        end = time.perf_counter()
        torch.cuda.synchronize()
        per_launch_us.append((end - start) * 1e6 / per_batch)
    return per_launch_us


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=int, default=200)
    parser.add_argument("--batch-launches", type=int, default=256)
    args = parser.parse_args()
    if args.batches < 1 or args.batch_launches < 1:
        parser.error("--batches and --batch-launches need positive counts")
    x = torch.zeros(1, device="cuda")
    phases = ("torch_add", "torch_add_nvtx")
    for name in phases:  # warm-up: the kernel's load, the allocator, NVTX's first call
        run_phase(name, x, max(1, args.batches // 10), args.batch_launches)
    for name in phases:
        us = sorted(run_phase(name, x, args.batches, args.batch_launches))
        q = statistics.quantiles(us, n=10, method="inclusive") if len(us) > 1 else us * 9
        print(f"launch_cost {name}: {statistics.median(us):.3f} us per launch (p10 {q[0]:.3f}, "
              f"p90 {q[-1]:.3f}, {args.batches} batches of {args.batch_launches})", flush=True)


if __name__ == "__main__":
    main()
