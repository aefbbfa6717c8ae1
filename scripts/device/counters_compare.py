#!/usr/bin/env python3
"""Ours vs analytic vs Nsight Compute, per kernel and metric, from the outputs of
`counters_check ours` (JSON) and `ncu --csv --page raw --print-units base` on
`counters_check plain`. Kernels are matched by launch order. Prints a table and
the largest differences; exits 1 if ours misses analytic or ncu by more than 1%."""
import argparse
import csv
import json
import sys


def read_ncu(path):
    rows = list(csv.reader(open(path)))
    start = next(i for i, r in enumerate(rows) if r and r[0] == "ID")
    header = rows[start]
    kernels = []
    for r in rows[start + 1:]:
        if len(r) != len(header) or not r[0].strip().isdigit():
            continue  # the units row, ncu's own messages
        values = {}
        for name, text in zip(header, r):
            try:
                values[name] = float(text.replace(",", ""))
            except ValueError:
                values[name] = text
        kernels.append(values)
    return kernels


def main():
    p = argparse.ArgumentParser()
    p.add_argument("ours")
    p.add_argument("ncu")
    p.add_argument("--plain-seconds", type=float)
    p.add_argument("--ours-seconds", type=float)
    p.add_argument("--ncu-seconds", type=float)
    a = p.parse_args()
    ours = json.load(open(a.ours))
    ncu = read_ncu(a.ncu)
    metrics = ours["metrics"]
    ranges = ours["ranges"]
    print(f"counters validation on {ours['gpu']}: {len(ranges)} kernels, {len(metrics)} metrics, "
          f"{ours['passes']} passes, dropped ranges {ours['dropped_ranges']}; ncu rows {len(ncu)}")
    worst_ncu, worst_analytic, failures = 0.0, 0.0, 0
    steps = ours["steps"]
    # A range is one kernel in the `kernels` workload; a cuDNN call may launch
    # several, so per-metric ncu rows only line up when the counts agree.
    if len(ncu) != len(ranges):
        print(f"  ncu saw {len(ncu)} kernels for {len(ranges)} ranges: per-metric ncu comparison skipped")
        ncu = []
    print(f"  {'kernel':<16} {'metric':<52} {'ours':>16} {'analytic':>16} {'ncu':>16} {'ours/ncu-1':>11}")
    for i, r in enumerate(ranges):
        step = steps[i] if i < len(steps) else {"name": r["name"], "analytic": {}}
        theirs = ncu[i] if i < len(ncu) else {}
        for m in metrics:
            v = r["values"][m]
            exp = step["analytic"].get(m)
            n = theirs.get(m)
            rel_ncu = (v / n - 1) if isinstance(n, float) and n else (0.0 if n == 0 and v == 0 else None)
            rel_exp = (v / exp - 1) if exp else None
            if exp is None and not v and (n is None or n == 0):
                continue  # zero everywhere: not this kernel's quantity
            if exp is None and not isinstance(n, float):
                continue  # nothing to compare with
            # Durations differ by run (clocks, replay); they are shown, not judged.
            # Judged against ncu: what the kernel itself determines. Shown only:
            # - a user range's duration and clock rate (they span the whole range);
            # - DRAM writes (they depend on what is left dirty in L2 when the kernel
            #   ends, and ncu empties L2 by invalidation where we evict it by reading);
            # - byte counts under 16 MiB (a few lines of cache state, not traffic).
            small = "bytes" in m and max(abs(v), abs(n) if isinstance(n, float) else 0) < 2**24
            judged = not (m == "gpu__time_duration.sum" or m.endswith(".per_second")
                          or m == "dram__bytes_write.sum" or small)
            if judged and rel_ncu is not None:
                worst_ncu = max(worst_ncu, abs(rel_ncu))
                failures += abs(rel_ncu) > 0.01
            if rel_exp is not None:
                worst_analytic = max(worst_analytic, abs(rel_exp))
                failures += abs(rel_exp) > 0.01
            fmt = lambda x: "-" if x is None else f"{x:16.6g}"
            rel = "-" if rel_ncu is None else f"{100 * rel_ncu:+10.3f}%"
            print(f"  {step['name']:<16} {m:<52} {fmt(v)} {fmt(exp)} {fmt(n if isinstance(n, float) else None)} {rel:>11}")
        for q, v in r.get("quantities", {}).items():
            exp = step["analytic"].get(q)
            if exp is None:
                continue
            rel = v / exp - 1
            worst_analytic = max(worst_analytic, abs(rel))
            failures += abs(rel) > 0.01
            print(f"  {step['name']:<16} {q:<52} {v:16.6g} {exp:16.6g} {'-':>16} {'-':>11}  ours/analytic-1 {100 * rel:+.4f}%")
    print(f"largest |ours/analytic - 1| = {100 * worst_analytic:.4f}%, "
          f"largest |ours/ncu - 1| (time excluded) = {100 * worst_ncu:.4f}%")
    if a.plain_seconds and a.ours_seconds and a.ncu_seconds:
        ours_cost = a.ours_seconds - a.plain_seconds
        ncu_cost = a.ncu_seconds - a.plain_seconds
        print(f"wall: plain {a.plain_seconds:.3f} s, ours {a.ours_seconds:.3f} s, ncu {a.ncu_seconds:.3f} s; "
              f"whole-process ratio ncu/ours = {a.ncu_seconds / a.ours_seconds:.2f}x; "
              f"collection cost over the plain run ncu/ours = {ncu_cost / max(ours_cost, 1e-9):.2f}x")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
