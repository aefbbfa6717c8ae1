#!/usr/bin/env python3
"""Points of a timeroof JSON export whose per-kernel counters sit on the wrong kernel.

The check of measure/counter_collection.cpp's kernel_mismatches (issue #20), for
exports recorded before it: a kernel whose counted GPU time (metrics "duration")
is more than 2x its traced time while another kernel of the call is within 1.5x
of it, both with 1 us of slack for replay's overhead.

    scripts/kernel_mismatches.py samples/sample-run.json.gz samples/sample-run-h100.json.gz
"""
import gzip
import json
import sys

SLACK_S, FAR, FITS = 1e-6, 2.0, 1.5


def ratio(a, b):
    return max(a, b) / (min(a, b) + SLACK_S)


def mismatches(kernels):
    """[(index, counted_s, traced_s, index of a kernel that fits)] of one point."""
    out = []
    for i, k in enumerate(kernels):
        counted = k["metrics"]["duration"]
        if ratio(counted, k["duration_s"]) <= FAR:
            continue
        fits = [j for j, o in enumerate(kernels) if j != i and ratio(counted, o["duration_s"]) <= FITS]
        if fits:
            out.append((i, counted, k["duration_s"], fits[0]))
    return out


def main(paths):
    for path in paths:
        with open(path, "rb") as f:  # plain or gzip (`export --out FILE.gz`, the samples)
            raw = f.read()
        export = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
        counts = {}
        for run in export["runs"]:
            for p in run["points"]:
                kernels = p.get("kernels") or []
                if not kernels or not all("duration" in k["metrics"] for k in kernels):
                    continue
                found = mismatches(kernels)
                if not found:
                    continue
                family = p["op"].split("_")[0]
                counts[family] = counts.get(family, 0) + 1
                params = ", ".join(f"{k}={v}" for k, v in sorted(p["params"].items()))
                print(f"{path}: {p['sweep']} #{p['seq']} {p['op']} ({params})")
                for i, counted, traced, j in found:
                    print(f"    kernel {i} {kernels[i]['name'][:60]}: counted {counted * 1e6:.2f} us, "
                          f"traced {traced * 1e6:.2f} us; kernel {j} traced "
                          f"{kernels[j]['duration_s'] * 1e6:.2f} us fits")
        print(f"{path}: affected points per family: {counts or 'none'}")


if __name__ == "__main__":
    main(sys.argv[1:])
