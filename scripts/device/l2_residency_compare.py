#!/usr/bin/env python3
"""The consumer kernels of l2_residency.py under each profiler (l2-residency.sh):
DRAM bytes read as a share of the bytes the kernel reads, and the L2 read hit
rate. What a profiler evicted between producer and consumer shows as a higher
DRAM share than the program left alone would have.

    l2_residency_compare.py DIR NAME... [--ranges NAME]
    (DIR/NAME.json: a timeroof export; DIR/NAME.csv: ncu's per-kernel CSV)

With --ranges, ncu's range replay of each "pair" NVTX range (producer and consumer
as one range, nothing run between them): the consumer's share there is the pair's
DRAM read less the producer's (the first per-kernel column's), the program's own:
the median over the range's instances, with their lowest and highest.
"""
import argparse
import os
import re
import statistics
import sys

from counters_compare import read_ncu
from profile_counters_compare import measured_launches

DRAM = "dram__bytes_read.sum"
READ = "lts__t_sectors_srcunit_tex_op_read.sum"
HIT = "lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum"
SECTOR = 32


def launches(directory, name):
    """Each measured launch's metrics, in launch order."""
    path = os.path.join(directory, name)
    if os.path.exists(path + ".json"):
        return [e["details"]["metrics"] for e in measured_launches(path + ".json")]
    return read_ncu(path + ".csv") if os.path.exists(path + ".csv") else []


def pair_ranges(directory, name):
    """The DRAM bytes read by every measured instance of each "pair ..." range inside a
    "residency iteration" range, by pair name in the program's order. ncu names a
    range by its NVTX stack: `PID "<default domain>:residency iteration:none..."
    "<default domain>:pair 24 MiB:none..."`."""
    path = os.path.join(directory, name + ".csv")
    instances = {}
    for row in read_ncu(path) if os.path.exists(path) else []:
        stack = " ".join(v for v in row.values() if isinstance(v, str))
        label = re.search(r":(pair [^:]*):", stack)
        if label and ":residency iteration:" in stack and DRAM in row:
            instances.setdefault(label.group(1), []).append(row[DRAM])
    return instances


def main():
    p = argparse.ArgumentParser()
    p.add_argument("directory")
    p.add_argument("names", nargs="+")
    p.add_argument("--ranges", help="ncu range replay CSV of the pair ranges")
    a = p.parse_args()
    columns = {name: launches(a.directory, name) for name in a.names}
    counts = {name: len(rows) for name, rows in columns.items()}
    print("launches measured: " + ", ".join(f"{n} {c}" for n, c in counts.items()))
    present = [n for n in a.names if counts[n]]
    pairs = min(counts[n] for n in present) // 2 if present else 0
    if not pairs:
        print("nothing to compare")
        return 1
    ranges = list(pair_ranges(a.directory, a.ranges).items()) if a.ranges else []
    if a.ranges:
        print(f"{a.ranges}: {len(ranges)} pair ranges")
    print("consumer kernels (b = a + 1, right after a = x * 2): DRAM read / bytes read "
          "(L2 read hit rate)")
    header = [*present, *([f"{a.ranges} (pair)"] if ranges else [])]
    print(f"{'read MiB':>9s} " + " ".join(f"{n:>20s}" for n in header))
    for pair in range(pairs):
        cells = []
        for name in present:
            m = columns[name][2 * pair + 1]
            cells.append(f"{m[DRAM] / (m[READ] * SECTOR):8.4f} ({m[HIT] / m[READ]:6.4f})")
        consumer = columns[present[0]][2 * pair + 1]
        read_bytes = consumer[READ] * SECTOR
        if pair < len(ranges):
            label, reads = ranges[pair]
            producer = columns[present[0]][2 * pair][DRAM]
            shares = sorted((r - producer) / read_bytes for r in reads)
            cells.append(f"{statistics.median(shares):8.4f} ({shares[0]:.4f}-{shares[-1]:.4f}, "
                         f"{len(shares)} instances) {label}")
        print(f"{read_bytes / 2**20:9.1f} " + " ".join(f"{c:>20s}" for c in cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
