#!/usr/bin/env python3
"""Prints the ceilings issue's targets as ratios from two `timeroof export` files
of full `timeroof ceilings` runs on the same GPU. A benchmark, not a test: it
exits 0 and says MISS where a target is missed."""
import argparse
import json


def load(path):
    run = json.load(open(path))["runs"][0]
    return run["machine"]["gpu"]["name"], {c["name"]: c for c in run["machine"]["ceilings"]}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("run1")
    parser.add_argument("run2")
    parser.add_argument("--quick-seconds", type=float)
    parser.add_argument("--full-seconds", type=float)
    args = parser.parse_args()
    gpu, first = load(args.run1)
    gpu2, second = load(args.run2)
    assert gpu == gpu2, "compare runs of the same GPU kind only"
    rows = []

    def check(label, value, target, higher_is_better=True):
        ok = value >= target if higher_is_better else value <= target
        rows.append((label, value, target, "ok" if ok else "MISS"))

    def of_theoretical(name):
        c = first.get(name)
        return c["measured"] / c["theoretical"] if c and c.get("theoretical") else float("nan")

    for name in ("fp64_fma", "fp32_fma"):
        check(f"{name} / theoretical", of_theoretical(name), 0.97)
    for name in ("fp16_fma", "bf16_fma"):
        check(f"{name} / theoretical", of_theoretical(name), 0.95)
    for kind in ("bf16", "fp16"):
        ours, lib = first.get(f"tensor_{kind}"), first.get(f"cublaslt_{kind}")
        if ours and lib:
            check(f"tensor_{kind} / cublaslt_{kind}", ours["measured"] / lib["measured"], 1.0)
    check("hbm_copy / theoretical", of_theoretical("hbm_copy"), 0.93)
    for name in ("l2_read", "shared_read"):
        check(f"{name} / theoretical", of_theoretical(name), 0.85)
    worst = max(first, key=lambda n: abs(second[n]["measured"] / first[n]["measured"] - 1)
                if n in second else 0)
    spread = abs(second[worst]["measured"] / first[worst]["measured"] - 1)
    check(f"run-to-run, worst roof ({worst})", spread, 0.02, higher_is_better=False)
    if args.quick_seconds:
        check("--quick wall seconds", args.quick_seconds, 20, higher_is_better=False)
    if args.full_seconds:
        check("full wall seconds", args.full_seconds, 120, higher_is_better=False)

    print(f"ceilings targets on {gpu}")
    for label, value, target, verdict in rows:
        print(f"  {label:<44} {value:10.4f}  target {'<=' if 'seconds' in label or 'run-to-run' in label else '>='} {target:<6} {verdict}")
    print("run-to-run per roof (run2 / run1 - 1):")
    for name, c in first.items():
        if name in second:
            print(f"  {name:<24} {100 * (second[name]['measured'] / c['measured'] - 1):+6.2f}%")


if __name__ == "__main__":
    main()
