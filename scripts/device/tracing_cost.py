#!/usr/bin/env python3
"""What tracing alone costs a PyTorch iteration (issue 17: under 10%), per `timeroof
profile --api` choice: examples/pytorch/profile_models.py (a transformer encoder block,
host-bound, and a ResNet-50, batch 16, fp16, an NVTX range per module) runs untraced and
traced with each choice (--no-counters), in interleaved rounds (each round in another
order, so drift spreads over all choices). Each run's iteration time is the median of
the script's own CUDA-event times; per choice the median over rounds, and the ratio
traced / untraced. For traced runs also the store's size, the records per iteration
by kind (those starting inside the "<model> iteration" NVTX ranges), and how busy the
GPU was in those iterations (so the cost can be placed on the host or on the GPU), and
each traced run's CPU by thread (the injection library's TIMEROOF_PROFILE_CPU report):
the program's threads against the tracer's own.
With `--workload-args=--alternate-module-ranges` also what the module ranges cost
within each process (every other iteration runs without them): both sides in that
process's host mode, which still scales both.

    tracing_cost.py --timeroof .carry/timeroof --workload examples/pytorch/profile_models.py

A ratio benchmark, not a test: it prints, and exits 0 when every run worked.
"""
import argparse
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

LINE = re.compile(r"^(\w+) \w+ batch \d+: iteration times \(CUDA events, ms\): (.*)$")
# profile_models.py --alternate-module-ranges: the other iterations, without module ranges.
WITHOUT_LINE = re.compile(r"^(\w+) \w+ batch \d+: iteration times without its (\d+) module"
                          r" ranges \(CUDA events, ms\): (.*)$")
# The injection library's TIMEROOF_PROFILE_CPU=1 line: "timeroof profile: CPU by thread: ...".
CPU_REPORT = "CPU by thread: "
UNTRACED = "untraced"
# Not a timeroof choice: the workload under torch.profiler (Kineto, CUPTI's activity
# API with CUDA activities), the cost of another CUPTI tracer on the same iterations.
KINETO = "kineto"
# Diagnostic suffixes of a timeroof choice, each the injection library's environment
# variable that turns one part of the tracing off, to measure what it costs:
# "launches-nosync" runs without CUPTI's synchronization records, "none-nonames" without
# naming kernels at their launch (the driver callback on every launch), "launches-activity"
# records the chosen API calls through CUPTI's activity API instead of its callbacks,
# "none-nvtxcb" records NVTX ranges from CUPTI's NVTX callbacks instead of its MARKER
# activity records, "none-nowrite" frees every record unread (no conversion, no journal:
# the run stores nothing).
DIAGNOSTICS = {"-nosync": ("TIMEROOF_PROFILE_SYNC", "0"),
               "-nonames": ("TIMEROOF_PROFILE_NAMES", "0"),
               "-activity": ("TIMEROOF_PROFILE_API_RECORDS", "activity"),
               "-nvtxcb": ("TIMEROOF_PROFILE_NVTX_RECORDS", "callbacks"),
               "-nowrite": ("TIMEROOF_PROFILE_WRITE", "0")}
# A suffix "-runtime" or "-driver" ("launches-runtime", before any of the above) records
# the chosen calls of that API only (TIMEROOF_PROFILE_API_DOMAIN): what each domain's
# records cost.
DOMAINS = ("-runtime", "-driver")


def traced_command(timeroof, choice, db, workload):
    """The command and environment that run `workload` (a list) as `choice` asks:
    untraced, under torch.profiler (a Python workload's --torch-profiler), or under
    `timeroof profile --no-counters --api` with the diagnostic suffixes above."""
    env = dict(os.environ)
    if choice == UNTRACED:
        return workload, env
    if choice == KINETO:
        return workload + ["--torch-profiler"], env
    api = choice
    while suffix := next((d for d in DIAGNOSTICS if api.endswith(d)), None):
        api = api.removesuffix(suffix)
        name, value = DIAGNOSTICS[suffix]
        env[name] = value
    domain = next((d for d in DOMAINS if api.endswith(d)), None)
    if domain:  # one API's records only
        api = api.removesuffix(domain)
        env["TIMEROOF_PROFILE_API_DOMAIN"] = domain.removeprefix("-")
    env["TIMEROOF_PROFILE_CPU"] = "1"  # CPU by thread, reported at exit (nothing before)
    return [timeroof, "profile", "--db", db, "--no-counters", "--api", api,
            "--name", f"tracing-cost-{choice}", "--"] + workload, env


def interleaved_rounds(choices, rounds, budget_s):
    """(round, choice) pairs: each round takes every choice, starting one further along
    the list than the round before, so drift spreads over all of them; no round starts
    that may not end within budget_s (the first always does)."""
    started = time.monotonic()
    round_s = 0.0
    for r in range(rounds):
        if r > 0 and time.monotonic() - started + round_s > budget_s:
            print(f"stopping after {r} rounds: the next would pass --budget-s {budget_s}")
            return
        round_start = time.monotonic()
        for choice in choices[r % len(choices):] + choices[:r % len(choices)]:
            yield r, choice
        round_s = time.monotonic() - round_start


def cpu_list(text):
    """The CPUs of a list like "4-7,10" (as taskset takes them), as a set of ints."""
    cpus = set()
    for part in text.split(","):
        first, _, last = part.partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    return cpus


def run_choice(timeroof, choice, db, workload, timeout_s, cpus=None):
    """Runs `workload` as `choice` asks (traced_command), on the CPUs `cpus` (a set; None:
    wherever the scheduler likes); returns the finished process and its wall seconds, or
    raises with the ends of its output if it failed. Pinning every run, traced or not, to
    the same CPUs takes the host's placement out of the comparison (not the host's two
    modes on the H200 machines: see FAST_MODE)."""
    command, env = traced_command(timeroof, choice, db, workload)
    pin = (lambda: os.sched_setaffinity(0, cpus)) if cpus else None
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, env=env,
                          preexec_fn=pin)
    seconds = time.monotonic() - started
    if done.returncode != 0:
        raise RuntimeError(f"{choice}: exit {done.returncode}\n{done.stdout[-2000:]}\n"
                           f"{done.stderr[-2000:]}")
    return done, seconds


def round_ratios(traced_runs, untraced_runs):
    """Traced / untraced within each round (the runs of one round are adjacent in time,
    so drift between rounds cancels): the per-round ratios, in round order."""
    return [t / u for t, u in zip(traced_runs, untraced_runs)]


# Untraced runs spreading wider than this (slowest / fastest) mean a noisy machine: the
# ratios then say more about the machine than about tracing (H200, 2026-11: 4.3-9.6 ms).
NOISY_SPREAD = 1.2


# A process on the H200 machines runs in one of two host modes (untraced ResNet-50 at
# 4.9-5.3 ms or at 8.0-9.2 ms, pinned or not): runs within this factor of a choice's
# fastest are taken as its fast mode.
FAST_MODE = 1.10


def fast_mode(runs):
    """The runs within FAST_MODE of the fastest: the host's fast mode."""
    return [r for r in runs if r <= FAST_MODE * min(runs)]


def fast_mode_ratio(traced_runs, untraced_runs):
    """Median of the traced runs' fast mode over the untraced runs' (less luck than
    the fastest run alone), with how many runs each mode held."""
    traced, untraced = fast_mode(traced_runs), fast_mode(untraced_runs)
    return statistics.median(traced) / statistics.median(untraced), len(traced), len(untraced)


def noise_warning(untraced_runs):
    """A warning line when the untraced runs spread past NOISY_SPREAD, else None."""
    spread = max(untraced_runs) / min(untraced_runs)
    if spread <= NOISY_SPREAD:
        return None
    return (f"  NOISY: untraced runs spread {spread:.2f}x (slowest / fastest); trust the"
            " fast-mode ratio over the medians (per-round ratios mix the host's modes), and"
            " measure again on a quieter call")


def iteration_medians(stdout, line=LINE):
    """{model: median iteration ms} of the workload's lines that `line` matches (its
    times in the last group)."""
    medians = {}
    for text in stdout.splitlines():
        if match := line.match(text.strip()):
            medians[match.group(1)] = statistics.median(
                float(t) for t in match.group(match.lastindex).split(","))
    return medians


def module_ranges(stdout):
    """{model: module ranges an iteration} from the workload's WITHOUT_LINE."""
    return {m.group(1): int(m.group(2)) for m in map(WITHOUT_LINE.match, stdout.splitlines())
            if m}


def run_once(args, choice, db):
    """One run: {model: median ms}; ({model: median ms without module ranges}, {model:
    module ranges an iteration}), both empty unless the workload alternates them; wall
    seconds; stderr."""
    workload = [sys.executable, args.workload, "--model", args.model, "--iterations",
                str(args.iterations), "--warmup", str(args.warmup)] + args.workload_args.split()
    done, seconds = run_choice(args.timeroof, choice, db, workload, args.run_timeout_s,
                               args.cpus)
    medians = iteration_medians(done.stdout)
    if len(medians) != (2 if args.model == "both" else 1):
        raise RuntimeError(f"{choice}: no iteration times in\n{done.stdout[-2000:]}")
    without = iteration_medians(done.stdout, WITHOUT_LINE)
    return medians, (without, module_ranges(done.stdout)), seconds, done.stderr


def in_process_cost(with_runs, without_runs):
    """The median over runs of each run's `with` less its `without` (e.g. iterations
    with module ranges less those without): both sides from one process, in that
    process's host mode, which still scales both."""
    return statistics.median(w - wo for w, wo in zip(with_runs, without_runs))


def iteration_spans(con, model):
    """[start_ns, end_ns] of each of the model's measured iterations (its NVTX ranges)."""
    return con.execute(
        "SELECT start_ns, end_ns FROM trace_events WHERE kind = 'nvtx_range' AND name = ?",
        (f"{model} iteration",)).fetchall()


def records_per_iteration(db, model):
    """Records starting inside the model's measured iterations, by kind, per iteration."""
    con = sqlite3.connect(db)
    try:
        spans = iteration_spans(con, model)
        counts = {}
        for start, end in spans:
            for kind, n in con.execute(
                    "SELECT kind, COUNT(*) FROM trace_events WHERE start_ns >= ? AND start_ns < ? "
                    "GROUP BY kind", (start, end)):
                counts[kind] = counts.get(kind, 0) + n
        return {k: v / len(spans) for k, v in counts.items()} if spans else {}
    finally:
        con.close()


def gpu_busy_per_iteration(db, model):
    """How busy the GPU was in the model's traced iterations: the kernels launched inside
    each "<model> iteration" range, from the first one's start to the last one's end;
    the share of that span some kernel ran, and the idle gaps between consecutive
    kernels. A GPU busy nearly all the span is what the iteration waits on, so what
    tracing adds there it adds on the GPU; long gaps mean the GPU waits for the host.
    Returns {span_us, busy, gap_median_us, gap_total_us, kernels}, medians over the
    iterations, or {} without iterations."""
    con = sqlite3.connect(db)
    try:
        per_iteration = []
        for start, end in iteration_spans(con, model):
            kernels = con.execute(
                "SELECT start_ns, end_ns FROM trace_events WHERE kind = 'kernel' AND "
                "correlation_id IN (SELECT correlation_id FROM trace_events WHERE "
                "kind IN ('runtime_api', 'driver_api') AND start_ns >= ? AND start_ns < ?) "
                "ORDER BY start_ns", (start, end)).fetchall()
            if not kernels:  # launches not recorded: the kernels starting in the range
                kernels = con.execute(
                    "SELECT start_ns, end_ns FROM trace_events WHERE kind = 'kernel' AND "
                    "start_ns >= ? AND start_ns < ? ORDER BY start_ns", (start, end)).fetchall()
            if not kernels:
                continue
            busy, gaps, reach = 0, [], kernels[0][0]
            for k_start, k_end in kernels:
                if k_start > reach:
                    gaps.append(k_start - reach)
                busy += max(0, k_end - max(k_start, reach))
                reach = max(reach, k_end)
            span = reach - kernels[0][0]
            per_iteration.append((span / 1e3, busy / span if span else 0.0,
                                  statistics.median(gaps) / 1e3 if gaps else 0.0,
                                  sum(gaps) / 1e3, len(kernels)))
        if not per_iteration:
            return {}
        keys = ("span_us", "busy", "gap_median_us", "gap_total_us", "kernels")
        return {k: statistics.median(v[i] for v in per_iteration) for i, k in enumerate(keys)}
    finally:
        con.close()


def kernels_per_iteration(records, choices, model):
    """The kernels an iteration of `model` launched, from the first of `choices` whose
    trace has them (records: {choice: {model: {kind: per iteration}}}), else None. A
    host-bound program pays tracing per launch, so the cost reads best per kernel."""
    return next((records[c][model]["kernel"] for c in choices
                 if records.get(c, {}).get(model, {}).get("kernel")), None)


def print_in_process_range_cost(choices, models, per_run, per_run_without, range_counts):
    """The module ranges' cost within each process (--alternate-module-ranges), per
    choice: ms an iteration, us a range (push and pop), and what tracing adds to
    untraced's (what the torch.cuda.nvtx calls cost with no tracer)."""
    print("\n== the module ranges' cost within each process (iterations with them - the"
          " other iterations without, median over runs): ms an iteration, us a range, and"
          " added to untraced's")
    for model in models:
        ranges = range_counts.get(model, 0)
        base = in_process_cost(per_run[(UNTRACED, model)], per_run_without[(UNTRACED, model)])
        print(f"{model}: {ranges} module ranges an iteration")
        for choice in choices:
            if (choice, model) not in per_run_without:
                continue
            cost = in_process_cost(per_run[(choice, model)], per_run_without[(choice, model)])
            per_range = f", {1e3 * cost / ranges:.2f} us a range" if ranges else ""
            added = "" if choice == UNTRACED else f", +{cost - base:.3f} ms over untraced's"
            print(f"  {choice:18s} {cost:.3f} ms{per_range}{added}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--timeroof", required=True)
    parser.add_argument("--workload", default="examples/pytorch/profile_models.py")
    parser.add_argument("--model", default="both", help="the workload's --model")
    parser.add_argument("--workload-args", default="",
                        help="more arguments for the workload, e.g. --no-module-ranges")
    parser.add_argument("--choices", default="launches,none,all,runtime,driver",
                        help=f"timeroof --api choices (suffixes {', '.join(DIAGNOSTICS)}: without "
                             f"sync records, without launch names, API calls from activity "
                             f"records, NVTX from callbacks, records freed unread; -runtime or "
                             f"-driver before them: that API's records only), and {KINETO!r} for "
                             f"torch.profiler")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--budget-s", type=float, default=600,
                        help="start no round that may not end within this (at least 1 round)")
    parser.add_argument("--run-timeout-s", type=float, default=90)
    parser.add_argument("--cpus", type=cpu_list,
                        help="run every run (traced or not) on these CPUs, e.g. 4-7 (not 0-3 on "
                             "the H200 machines: busy, docs/design.md)")
    args = parser.parse_args()
    choices = [UNTRACED] + args.choices.split(",")
    per_run = {}  # (choice, model) -> [median ms per run]
    per_run_without = {}  # the same, of the iterations without module ranges
    module_range_counts = {}  # model -> module ranges an iteration
    sizes, records, busy, stderr_lines, cpu_reports = {}, {}, {}, {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for r, choice in interleaved_rounds(choices, args.rounds, args.budget_s):
            db = os.path.join(tmp, f"{choice}-{r}.db")
            medians, (without, ranges), seconds, err = run_once(args, choice, db)
            for model, ms in medians.items():
                per_run.setdefault((choice, model), []).append(ms)
            for model, ms in without.items():
                per_run_without.setdefault((choice, model), []).append(ms)
            module_range_counts.update(ranges)
            if choice not in (UNTRACED, KINETO):
                sizes.setdefault(choice, []).append(os.path.getsize(db))
                if choice not in records:
                    records[choice] = {m: records_per_iteration(db, m) for m in medians}
                    busy[choice] = {m: gpu_busy_per_iteration(db, m) for m in medians}
                    stderr_lines[choice] = [l for l in err.splitlines()
                                            if l.startswith("timeroof")
                                            and CPU_REPORT not in l]
                cpu_reports.setdefault(choice, []).extend(
                    l for l in err.splitlines() if CPU_REPORT in l)
                os.remove(db)
            print(f"round {r + 1} {choice:9s} {seconds:5.1f} s: " +
                  ", ".join(f"{m} {ms:.3f} ms" for m, ms in sorted(medians.items())),
                  flush=True)

    models = sorted({m for (_, m) in per_run})
    print("\n== iteration time (median over rounds of each run's median), ratio traced/untraced;"
          " also the median of each round's own ratio, the fastest runs' ratio, and the"
          f" ratio of the runs within {FAST_MODE}x of each side's fastest (the host's fast mode)"
          + (f"; workload {args.workload_args}" if args.workload_args else "")
          + (f"; every run on CPUs {sorted(args.cpus)}" if args.cpus else ""))
    stored = [c for c in choices[1:] if c != KINETO]
    for model in models:
        untraced_runs = per_run[(UNTRACED, model)]
        base = statistics.median(untraced_runs)
        kernels = kernels_per_iteration(records, stored, model)
        print(f"{model}: untraced {base:.3f} ms (runs {min(untraced_runs):.3f}-"
              f"{max(untraced_runs):.3f})")
        if warning := noise_warning(untraced_runs):
            print(warning)
        for choice in choices[1:]:
            runs = per_run[(choice, model)]
            traced = statistics.median(runs)
            verdict = "ok" if traced / base < 1.10 else "OVER 10%"
            label = "torch.profiler" if choice == KINETO else f"--api {choice}"
            paired = statistics.median(round_ratios(runs, untraced_runs))
            fast, fast_traced, fast_untraced = fast_mode_ratio(runs, untraced_runs)
            print(f"  {label:15s} {traced:.3f} ms (runs {min(runs):.3f}-{max(runs):.3f})"
                  f"  ratio {traced / base:.3f}  {verdict}  (per round {paired:.3f},"
                  f" fastest {min(runs) / min(untraced_runs):.3f}, fast mode {fast:.3f} of"
                  f" {fast_traced}/{len(runs)} and {fast_untraced}/{len(untraced_runs)} runs)"
                  + (f", {1e3 * (traced - base) / kernels:+.2f} us a kernel" if kernels else ""))
    if per_run_without:
        print_in_process_range_cost(choices, models, per_run, per_run_without,
                                    module_range_counts)
    print("\n== store size per traced run (whole program: setup, warm-up, iterations)")
    for choice in stored:
        size = statistics.median(sizes[choice])
        print(f"  --api {choice:9s} {size / 1e6:7.2f} MB")
    print("\n== records per iteration, by kind (records starting inside the iteration range)")
    for choice in stored:
        for model in models:
            kinds = records[choice].get(model, {})
            total = sum(kinds.values())
            detail = ", ".join(f"{k} {v:.0f}" for k, v in sorted(kinds.items()))
            print(f"  --api {choice:9s} {model}: {total:.0f} ({detail})")
    print("\n== the GPU in the traced iterations (first run; median over iterations): kernels"
          " launched, first start to last end, busy share, idle gaps between kernels")
    for choice in stored:
        for model in models:
            b = busy[choice].get(model)
            if b:
                print(f"  --api {choice:9s} {model}: {b['kernels']:.0f} kernels over "
                      f"{b['span_us'] / 1e3:.3f} ms, busy {100 * b['busy']:.1f}%, gaps "
                      f"{b['gap_total_us'] / 1e3:.3f} ms (median {b['gap_median_us']:.2f} us)")
    for choice in stored:
        for line in stderr_lines[choice]:
            print(f"  [{choice}] {line}")
    print("\n== each traced run's CPU by thread (the injection library's report at exit)")
    for choice in stored:
        for line in cpu_reports.get(choice, []):
            print(f"  [{choice}] {line.split(CPU_REPORT, 1)[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
