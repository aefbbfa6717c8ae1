#!/usr/bin/env python3
"""CPU test of ceilings_targets.py (ctest: ceilings_targets_py) on real exports: the
H200 pair of 2026-11-28 (host windows in processes, the fast-mode roof) meets the
run-to-run and hbm_copy targets; the pair of 2026-11-21 (windows in one process)
misses the launch targets; a library reference whose clock moved with it is
explained, one whose clock did not is a MISS. Standard library only."""
import copy
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "..", "tests", "fixtures")
NEW = [os.path.join(FIXTURES, f"ceilings-h200-1128-run{i}.json") for i in (1, 2)]
OLD = [os.path.join(FIXTURES, f"ceilings-h200-run{i}.json") for i in (1, 2)]
COPIES = os.path.join(FIXTURES, "framework-copy-h200-1128.json")


def verdicts(run1, run2, *extra):
    """{label: (value, verdict)} from the script's table."""
    out = subprocess.run([sys.executable, os.path.join(HERE, "ceilings_targets.py"), run1, run2,
                          *extra], capture_output=True, text=True, check=True).stdout
    rows = {}
    for line in out.splitlines():
        m = re.match(r"  (.+?)\s+(-?[0-9.]+|nan)\s+target (?:>=|<=) \S+\s+(ok: explained|ok|MISS)$",
                     line)
        if m:
            rows[m.group(1)] = (float(m.group(2)), m.group(3))
    return rows


def row(rows, prefix):
    matches = [v for k, v in rows.items() if k.startswith(prefix)]
    assert len(matches) == 1, (prefix, list(rows))
    return matches[0]


class CeilingsTargets(unittest.TestCase):
    def test_the_new_pair_repeats(self):
        rows = verdicts(*NEW, "--framework-copy", COPIES, "--full-seconds", "118.8")
        for prefix in ("launch_async run-to-run", "launch_sync run-to-run",
                       "launch_graph_node run-to-run", "run-to-run, worst own roof",
                       "h2d_pageable run-to-run", "d2h_pageable run-to-run",
                       "hbm_copy / PyTorch memcpy_d2d", "hbm_copy / PyTorch elementwise",
                       "highest compute roof", "full wall seconds",
                       "l2_read: its busiest L2 unit"):
            self.assertEqual(row(rows, prefix)[1], "ok", prefix)
        self.assertAlmostEqual(row(rows, "l2_read: its busiest L2 unit")[0], 0.933, places=3)
        self.assertLess(row(rows, "launch_async run-to-run")[0], 0.001)
        # cuBLASLt int8 moved 7.4% with its clock 13% apart: explained, not hidden.
        value, verdict = row(rows, "cublaslt_int8 run-to-run")
        self.assertAlmostEqual(value, 0.0737, places=3)
        self.assertEqual(verdict, "ok: explained")

    def test_the_old_pair_misses_the_launch_targets(self):
        rows = verdicts(*OLD)
        self.assertEqual(row(rows, "launch_async run-to-run")[1], "MISS")
        self.assertEqual(row(rows, "launch_sync run-to-run")[1], "MISS")
        self.assertFalse(any(k.startswith("hbm_copy / PyTorch") for k in rows),
                         "no framework copies given: no copy target")
        self.assertFalse(any(k.startswith("l2_read: its busiest") for k in rows),
                         "the old roof profiled no L2 unit")

    def test_a_reference_moving_against_its_clock_is_a_miss(self):
        runs = [json.load(open(p)) for p in NEW]
        moved = copy.deepcopy(runs[1])
        for c in moved["runs"][0]["machine"]["ceilings"]:
            if c["name"] == "cublaslt_fp8":  # same clock in both runs; 10% faster now
                c["measured"] *= 1.10
        with tempfile.TemporaryDirectory() as tmp:
            second = os.path.join(tmp, "run2.json")
            json.dump(moved, open(second, "w"))
            rows = verdicts(NEW[0], second)
        value, verdict = row(rows, "cublaslt_fp8 run-to-run")
        self.assertAlmostEqual(value, 0.098, delta=0.002)  # 1.10 x the -0.17% the runs had
        self.assertEqual(verdict, "MISS")


if __name__ == "__main__":
    unittest.main()
