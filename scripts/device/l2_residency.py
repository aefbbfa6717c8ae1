#!/usr/bin/env python3
"""A program whose DRAM reads are known, for judging how a profiler changes what a
kernel finds in L2 (scripts/device/l2-residency.sh, issue 17).

Each iteration (one NVTX range "residency iteration") runs, for each size S, a
producer `a = x * 2` and right after it a consumer `b = a + 1` on fp16 tensors of S
bytes, the two in an NVTX range of their own ("pair S MiB": a profiler that
measures the pair as one range, ncu's range replay, shows what the consumer read
with nothing between the two kernels). Left alone, the consumer finds in L2 what
the producer wrote there: on a 50 MB L2 nearly all of `a` when S is well inside it,
little when S is far beyond it. Its DRAM read under a profiler says how much of that the profiler's own work
between the two kernels evicted. With --gap-ms the last pair waits that long
between producer and consumer (host sleep, GPU idle): whether idle time alone
costs residency.

    timeroof profile --iteration-range 'residency iteration' --skip 1 -- python3 l2_residency.py
"""
import argparse
import sys
import time

import torch

MIB = 1 << 20


def pair_name(size, gap_ms):
    return f"pair {size // MIB} MiB" + (f" gap {gap_ms:g} ms" if gap_ms else "")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes-mib", default="8,16,24,32,48,256")
    p.add_argument("--gap-mib", type=int, default=16, help="size of the pair with a gap")
    p.add_argument("--gap-ms", type=float, default=5.0)
    p.add_argument("--iterations", type=int, default=8)
    p.add_argument("--warmup", type=int, default=1)
    a = p.parse_args()
    if not torch.cuda.is_available():
        print("l2_residency.py: no CUDA GPU visible to PyTorch", file=sys.stderr)
        return 2
    pairs = [(int(s) * MIB, 0.0) for s in a.sizes_mib.split(",")] + [(a.gap_mib * MIB, a.gap_ms)]
    tensors = []
    for size, _ in pairs:
        x = torch.rand(size // 2, dtype=torch.float16, device="cuda")
        tensors.append((x, torch.empty_like(x), torch.empty_like(x)))
    torch.cuda.synchronize()
    for i in range(a.warmup + a.iterations):
        torch.cuda.nvtx.range_push("residency iteration" if i >= a.warmup else "residency warm-up")
        for (size, gap_ms), (x, y, z) in zip(pairs, tensors):
            torch.cuda.nvtx.range_push(pair_name(size, gap_ms))
            torch.mul(x, 2, out=y)
            if gap_ms:
                torch.cuda.synchronize()
                time.sleep(gap_ms / 1000)
            torch.add(y, 1, out=z)
            torch.cuda.nvtx.range_pop()
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
    assert torch.equal(z, x * 2 + 1)
    print("pairs: " + ", ".join(pair_name(s, g) for s, g in pairs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
