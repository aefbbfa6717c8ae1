#!/usr/bin/env python3
"""CPU test of launch_cost.py and tracing_cost.traced_command (ctest: launch_cost_py):
stand-ins for timeroof (runs the command after "--") and for examples/launch_cost
(prints a per-launch time that depends on the diagnostics the choice set), so the
suffix-to-environment mapping and the medians and differences printed are checked
against known numbers; tracing_cost.round_ratios, fast_mode_ratio, noise_warning,
kernels_per_iteration and the --cpus pinning; the module ranges' in-process cost
(iteration_medians, module_ranges, in_process_cost); and
tracing_cost.gpu_busy_per_iteration on a trace table written by hand.
Standard library only."""
import os
import re
import sqlite3
import stat
import statistics
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from tracing_cost import (WITHOUT_LINE, cpu_list, fast_mode_ratio,  # noqa: E402
                          gpu_busy_per_iteration, in_process_cost, iteration_medians,
                          kernels_per_iteration, module_ranges, noise_warning, round_ratios,
                          run_choice, traced_command)

# Untraced 3.0 us a launch; traced 4.0; +0.5 with the names (TIMEROOF_PROFILE_NAMES
# unset), +0.25 with sync records; the NVTX phase +0.125 over launch, +0.375 traced.
# Each run adds 0-2 thousandths (its run number mod 3) so runs differ.
PROGRAM = r'''#!/usr/bin/env python3
import os, sys
traced = os.environ.get("FAKE_TRACED") == "1"
base = 3.0
if traced:
    base = 4.0
    if os.environ.get("TIMEROOF_PROFILE_NAMES") != "0":
        base += 0.5
    if os.environ.get("TIMEROOF_PROFILE_SYNC") != "0":
        base += 0.25
counter = os.environ["FAKE_COUNTER"]
with open(counter, "a") as f:
    f.write("x")
run = len(open(counter).read())
base += (run % 3) / 1000.0
print("some other output")
print(f"launch_cost launch: {base:.3f} us per launch (p10 0, p90 0, 1 batches of 1)")
nvtx = 0.375 if traced else 0.125
print(f"launch_cost launch_nvtx: {base + nvtx:.3f} us per launch (p10 0, p90 0, 1 batches of 1)")
'''
TIMEROOF = r'''#!/bin/sh
while [ "$1" != "--" ]; do shift; done
shift
FAKE_TRACED=1 exec "$@"
'''


def write_script(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)


class TracedCommand(unittest.TestCase):
    def test_suffixes_set_the_diagnostics(self):
        cases = {
            "untraced": (None, {}),
            "none": ("none", {}),
            "launches-nosync": ("launches", {"TIMEROOF_PROFILE_SYNC": "0"}),
            "none-nonames": ("none", {"TIMEROOF_PROFILE_NAMES": "0"}),
            "launches-runtime-nosync": ("launches", {"TIMEROOF_PROFILE_SYNC": "0",
                                                     "TIMEROOF_PROFILE_API_DOMAIN": "runtime"}),
            "all-nonames-nosync": ("all", {"TIMEROOF_PROFILE_SYNC": "0",
                                           "TIMEROOF_PROFILE_NAMES": "0"}),
            "launches-driver-activity": ("launches", {"TIMEROOF_PROFILE_API_RECORDS": "activity",
                                                      "TIMEROOF_PROFILE_API_DOMAIN": "driver"}),
            "launches-nvtxcb": ("launches", {"TIMEROOF_PROFILE_NVTX_RECORDS": "callbacks"}),
            "none-nowrite": ("none", {"TIMEROOF_PROFILE_WRITE": "0"}),
        }
        for choice, (api, variables) in cases.items():
            command, env = traced_command("timeroof", choice, "x.db", ["prog", "--flag"])
            self.assertEqual(command[-2:], ["prog", "--flag"], choice)
            if api is None:
                self.assertEqual(command, ["prog", "--flag"])
                self.assertNotIn("TIMEROOF_PROFILE_CPU", env)
            else:
                self.assertEqual(command[:2], ["timeroof", "profile"])
                self.assertEqual(env["TIMEROOF_PROFILE_CPU"], "1", choice)
                self.assertEqual(command[command.index("--api") + 1], api, choice)
            for name in ("TIMEROOF_PROFILE_SYNC", "TIMEROOF_PROFILE_NAMES",
                         "TIMEROOF_PROFILE_API_DOMAIN", "TIMEROOF_PROFILE_API_RECORDS",
                         "TIMEROOF_PROFILE_NVTX_RECORDS", "TIMEROOF_PROFILE_WRITE"):
                self.assertEqual(env.get(name), variables.get(name), f"{choice}: {name}")


class Pinning(unittest.TestCase):
    def test_cpu_lists_as_taskset_writes_them(self):
        self.assertEqual(cpu_list("4-7,10"), {4, 5, 6, 7, 10})
        self.assertEqual(cpu_list("0"), {0})

    def test_every_run_traced_or_not_runs_on_the_chosen_cpus(self):
        cpu = min(os.sched_getaffinity(0))
        show = [sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"]
        with tempfile.TemporaryDirectory() as work:
            timeroof = os.path.join(work, "timeroof")
            write_script(timeroof, TIMEROOF)
            for choice in ("untraced", "launches"):
                done, _ = run_choice(timeroof, choice, "x.db", show, 30, {cpu})
                self.assertEqual(done.stdout.strip(), f"[{cpu}]", choice)
            done, _ = run_choice(timeroof, "untraced", "x.db", show, 30)
            self.assertEqual(done.stdout.strip(), str(sorted(os.sched_getaffinity(0))))


class RoundRatios(unittest.TestCase):
    def test_each_round_against_its_own_untraced_run(self):
        # The machine slows down in round 2: the ratio of medians would mix rounds.
        untraced = [4.0, 8.0, 4.4]
        traced = [5.0, 9.6, 4.4]
        self.assertEqual(round_ratios(traced, untraced), [1.25, 1.2, 1.0])

    def test_the_fast_mode_of_a_two_mode_host(self):
        # ResNet-50 on one H200 call (2026-11-29, 12 pinned rounds, ms): each process
        # ran in the host's fast (~5.1 / ~6.3) or slow mode.
        untraced = [5.321, 9.120, 5.128, 8.388, 5.866, 5.130, 4.998, 4.933, 8.043, 5.132,
                    8.919, 9.166]
        launches = [6.315, 12.032, 6.343, 6.306, 11.433, 6.307, 10.150, 7.289, 7.404,
                    10.947, 10.524, 8.502]
        ratio, traced_n, untraced_n = fast_mode_ratio(launches, untraced)
        # Fast modes: untraced 4.933-5.321 (5.866 is past 1.1x 4.933), launches 6.306-6.343.
        self.assertEqual((traced_n, untraced_n), (4, 6))
        self.assertAlmostEqual(ratio, statistics.median([6.315, 6.343, 6.306, 6.307]) /
                               statistics.median([5.321, 5.128, 5.130, 4.998, 4.933, 5.132]))
        self.assertAlmostEqual(ratio, 1.230, places=3)

    def test_a_noisy_machine_is_named(self):
        self.assertIsNone(noise_warning([4.0, 4.4, 4.8]))
        self.assertIn("spread 2.18x", noise_warning([4.4, 9.6, 5.0]))

    def test_the_kernels_an_iteration_launched_from_the_first_trace_that_has_them(self):
        # ResNet-50 inference, batch 128 (H200, 2026-12-02): kernels per iteration.
        records = {"launches": {"resnet50": {"kernel": 351.0, "runtime_api": 355.0}},
                   "none": {"resnet50": {"kernel": 351.0}}, "empty": {"resnet50": {}}}
        self.assertEqual(kernels_per_iteration(records, ["empty", "none"], "resnet50"), 351.0)
        self.assertIsNone(kernels_per_iteration(records, ["empty"], "resnet50"))
        self.assertIsNone(kernels_per_iteration(records, ["none"], "transformer"))
        self.assertIsNone(kernels_per_iteration(records, [], "resnet50"))


class InProcessRangeCost(unittest.TestCase):
    # profile_models.py --alternate-module-ranges, both models (the format it prints).
    OUTPUT = """resnet50 fp16 batch 16: iteration times (CUDA events, ms): 5.0, 5.4, 5.2
resnet50 fp16 batch 16: iteration times without its 183 module ranges (CUDA events, ms): 4.5, 4.6
transformer fp16 batch 16: iteration times (CUDA events, ms): 2.0
"""

    def test_both_halves_of_a_run_and_the_ranges_an_iteration(self):
        self.assertEqual(iteration_medians(self.OUTPUT), {"resnet50": 5.2, "transformer": 2.0})
        self.assertEqual(iteration_medians(self.OUTPUT, WITHOUT_LINE), {"resnet50": 4.55})
        self.assertEqual(module_ranges(self.OUTPUT), {"resnet50": 183})
        self.assertEqual(iteration_medians("no times here"), {})

    def test_each_run_against_its_own_other_half(self):
        # A slow-mode run (second) doubles both halves: the difference per run holds.
        with_ranges, without = [5.2, 10.4, 5.3], [4.6, 9.2, 4.6]
        self.assertAlmostEqual(in_process_cost(with_ranges, without), 0.7)


class LaunchCost(unittest.TestCase):
    def test_medians_and_added_time(self):
        with tempfile.TemporaryDirectory() as work:
            program, timeroof = os.path.join(work, "program"), os.path.join(work, "timeroof")
            write_script(program, PROGRAM)
            write_script(timeroof, TIMEROOF)
            env = dict(os.environ, FAKE_COUNTER=os.path.join(work, "counter"))
            for name in ("TIMEROOF_PROFILE_SYNC", "TIMEROOF_PROFILE_NAMES"):
                env.pop(name, None)
            out = subprocess.run(
                [sys.executable, os.path.join(HERE, "launch_cost.py"), "--timeroof", timeroof,
                 "--program", program, "--choices", "none,none-nonames,launches-nosync",
                 "--rounds", "3"], capture_output=True, text=True, check=True, env=env).stdout
        head, _, over_launch = out.partition("== us a launch over the same run's plain launch")
        rows = {}
        phase = None
        for line in head.splitlines():
            if m := re.match(r"(\w+): untraced ([\d.]+) us", line):
                phase = m.group(1)
                rows[(phase, "untraced")] = float(m.group(2))
            elif m := re.match(r"\s+--api (\S+)\s+([\d.]+) us .*?([+-][\d.]+) us", line):
                rows[(phase, m.group(1))] = (float(m.group(2)), float(m.group(3)))
        # Each run adds 0-2 thousandths: medians hold to within 0.003 us.
        self.assertAlmostEqual(rows[("launch", "untraced")], 3.0, delta=0.003)
        self.assertAlmostEqual(rows[("launch_nvtx", "untraced")], 3.125, delta=0.003)
        for choice, added in {"none": 1.75, "none-nonames": 1.25, "launches-nosync": 1.5}.items():
            traced, plus = rows[("launch", choice)]
            self.assertAlmostEqual(plus, added, delta=0.003, msg=choice)
            self.assertAlmostEqual(traced, 3.0 + added, delta=0.003, msg=choice)
            self.assertAlmostEqual(rows[("launch_nvtx", choice)][1], added + 0.25, delta=0.003,
                                   msg=choice)
        # Within each run: the NVTX range over the plain launch, and what tracing adds.
        nvtx = {m.group(1): (float(m.group(2)), m.group(3)) for m in re.finditer(
            r"^  (\S+)\s+([+-][\d.]+) us(?:\s+([+-][\d.]+) us over untraced's)?$",
            over_launch, re.M)}
        self.assertEqual(nvtx["untraced"], (0.125, None))
        for choice in ("none", "none-nonames", "launches-nosync"):
            self.assertEqual(nvtx[choice], (0.375, "+0.250"), choice)


class GpuBusy(unittest.TestCase):
    @staticmethod
    def trace(path, rows):
        """rows: (kind, name, start_ns, end_ns, correlation_id), as the store keeps them."""
        con = sqlite3.connect(path)
        con.execute("CREATE TABLE trace_events (kind TEXT, name TEXT, start_ns INTEGER, "
                    "end_ns INTEGER, correlation_id INTEGER)")
        con.executemany("INSERT INTO trace_events VALUES (?, ?, ?, ?, ?)", rows)
        con.commit()
        con.close()

    def test_busy_share_and_gaps_of_the_kernels_launched_in_each_iteration(self):
        # Iteration 1 (host 0-100 us) launches kernels 1-3: 10-30, 25-40 (overlaps the
        # first), 50-60 us; busy 40 of a 50 us span, one 10 us gap. Kernel 4 runs in
        # the range but was launched before it: not counted. Iteration 2 (200-300 us)
        # launches two back-to-back kernels, 210-220 and 220-250: busy 100%, no gap.
        rows = [("nvtx_range", "m iteration", 0, 100_000, 0),
                ("nvtx_range", "m iteration", 200_000, 300_000, 0),
                ("nvtx_range", "other iteration", 0, 300_000, 0)]
        for corr, launch, (start, end) in [(1, 1_000, (10, 30)), (2, 2_000, (25, 40)),
                                           (3, 3_000, (50, 60)), (4, -5_000, (70, 75)),
                                           (5, 201_000, (210, 220)), (6, 202_000, (220, 250))]:
            rows.append(("runtime_api", "cudaLaunchKernel", launch, launch + 500, corr))
            rows.append(("kernel", f"k{corr}", start * 1000, end * 1000, corr))
        with tempfile.TemporaryDirectory() as work:
            db = os.path.join(work, "trace.db")
            self.trace(db, rows)
            busy = gpu_busy_per_iteration(db, "m")
            self.assertEqual(gpu_busy_per_iteration(db, "absent"), {})
        # Medians over the two iterations.
        self.assertAlmostEqual(busy["span_us"], (50 + 40) / 2)
        self.assertAlmostEqual(busy["busy"], (40 / 50 + 1.0) / 2)
        self.assertAlmostEqual(busy["gap_total_us"], (10 + 0) / 2)
        self.assertAlmostEqual(busy["gap_median_us"], (10 + 0) / 2)
        self.assertAlmostEqual(busy["kernels"], (3 + 2) / 2)

    def test_without_launch_records_the_kernels_that_start_in_the_range(self):
        rows = [("nvtx_range", "m iteration", 0, 100_000, 0),
                ("kernel", "a", 10_000, 20_000, 1), ("kernel", "b", 30_000, 40_000, 2),
                ("kernel", "late", 150_000, 160_000, 3)]
        with tempfile.TemporaryDirectory() as work:
            db = os.path.join(work, "trace.db")
            self.trace(db, rows)
            busy = gpu_busy_per_iteration(db, "m")
        self.assertEqual(busy["kernels"], 2)
        self.assertAlmostEqual(busy["span_us"], 30)
        self.assertAlmostEqual(busy["busy"], 20 / 30)
        self.assertAlmostEqual(busy["gap_total_us"], 10)


if __name__ == "__main__":
    unittest.main()
