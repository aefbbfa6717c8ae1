#!/usr/bin/env python3
"""What tracing adds to each launch (issue 17): examples/launch_cost (empty kernels,
host time per launch; plain, inside an NVTX range, followed by a synchronize, between
runtime queries; and the GPU's time per kernel, empty or busy, queued behind a gate)
runs untraced and under each `timeroof profile --api` choice, with tracing_cost.py's
diagnostic suffixes (-nosync, -nonames, -activity, -nvtxcb, -runtime, -driver), in
interleaved rounds (each round in another order). Per choice and phase: the median over
rounds of each run's median, the microseconds added per launch, and the ratio to
untraced.

    launch_cost.py --timeroof .carry/timeroof --program .carry/examples/launch_cost

A cost benchmark, not a test: it prints, and exits 0 when every run worked.
"""
import argparse
import os
import re
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tracing_cost import (UNTRACED, cpu_list, in_process_cost,  # noqa: E402
                          interleaved_rounds, run_choice)

LINE = re.compile(r"^launch_cost (\w+): ([\d.]+) us per launch")


def run_once(args, choice, db):
    workload = [args.program, "--batches", str(args.batches)]
    done, _ = run_choice(args.timeroof, choice, db, workload, args.run_timeout_s, args.cpus)
    phases = {m.group(1): float(m.group(2))
              for m in map(LINE.match, done.stdout.splitlines()) if m}
    if not phases:
        raise RuntimeError(f"{choice}: no launch_cost lines in\n{done.stdout[-2000:]}")
    return phases


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--timeroof", required=True)
    parser.add_argument("--program", required=True, help="the launch_cost example binary")
    parser.add_argument("--choices", default="none,launches,launches-activity,all")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--batches", type=int, default=200)
    parser.add_argument("--budget-s", type=float, default=300,
                        help="start no round that may not end within this (at least 1 round)")
    parser.add_argument("--run-timeout-s", type=float, default=60)
    parser.add_argument("--cpus", type=cpu_list,
                        help="run every run (traced or not) on these CPUs, e.g. 4-7 (not 0-3 on "
                             "the H200 machines: busy, docs/design.md)")
    args = parser.parse_args()
    choices = [UNTRACED] + args.choices.split(",")
    per_run = {}  # (choice, phase) -> [us per launch, one per run]
    with tempfile.TemporaryDirectory() as tmp:
        for r, choice in interleaved_rounds(choices, args.rounds, args.budget_s):
            db = os.path.join(tmp, f"{choice}-{r}.db")
            for phase, us in run_once(args, choice, db).items():
                per_run.setdefault((choice, phase), []).append(us)
            if os.path.exists(db):
                os.remove(db)
    phases = sorted({p for (_, p) in per_run})
    print("== us per launch, the host's (gpu_*: the GPU's per kernel); median over runs of each"
          " run's median; added to untraced")
    for phase in phases:
        base_runs = per_run[(UNTRACED, phase)]
        base = statistics.median(base_runs)
        print(f"{phase}: untraced {base:.3f} us (runs {min(base_runs):.3f}-{max(base_runs):.3f})")
        for choice in choices[1:]:
            runs = per_run[(choice, phase)]
            traced = statistics.median(runs)
            print(f"  --api {choice:22s} {traced:7.3f} us (runs {min(runs):.3f}-{max(runs):.3f})"
                  f"  {traced - base:+.3f} us  ratio {traced / base:.2f}")
    print_over_plain_launch(choices, phases, per_run)
    return 0


def print_over_plain_launch(choices, phases, per_run):
    """Each host phase less the plain launch of the same run (both in that process's
    host mode, which still scales both), median over runs: what an NVTX range, two
    runtime queries or a synchronize add to a launch, untraced and under each choice."""
    extra = [p for p in phases if p.startswith("launch_")]
    if "launch" not in phases or not extra:
        return
    print("== us a launch over the same run's plain launch (median over runs)")
    for phase in extra:
        print(f"{phase}:")
        base = None
        for choice in choices:
            cost = in_process_cost(per_run[(choice, phase)], per_run[(choice, "launch")])
            added = "" if base is None else f"  {cost - base:+.3f} us over untraced's"
            base = cost if base is None else base
            print(f"  {choice:28s} {cost:+7.3f} us{added}")


if __name__ == "__main__":
    sys.exit(main())
