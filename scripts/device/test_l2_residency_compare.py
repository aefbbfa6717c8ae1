#!/usr/bin/env python3
"""CPU test of l2_residency_compare.py (ctest: l2_residency_compare_py) on the H200
measurement of 2026-11-29 (tests/fixtures/l2-residency-h200-1129.tar.xz, made by
scripts/device/l2-residency.sh): the consumer's DRAM share per profiler and the
program's own from ncu's range replay of each pair; and the L2 share that
profile_counters_compare.py prints beside DRAM verdicts. Standard library only."""
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "..", "..", "tests", "fixtures", "l2-residency-h200-1129.tar.xz")
NAMES = ["ours-iter", "ours-iter-again", "ours-iter-blocking", "ours-kernel", "ncu-app",
         "ncu-app-again", "ncu-kernel"]
sys.path.insert(0, HERE)


class Residency(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with tempfile.TemporaryDirectory() as work:
            with tarfile.open(FIXTURE) as archive:
                # The "data" filter where Python has it (3.12+, later 3.11 and 3.10).
                archive.extractall(work, **({"filter": "data"} if hasattr(tarfile, "data_filter")
                                            else {}))
            out = subprocess.run([sys.executable, os.path.join(HERE, "l2_residency_compare.py"),
                                  work, *NAMES, "--ranges", "ncu-range"],
                                 capture_output=True, text=True, check=True).stdout
        cls.out = out
        cls.rows = []  # (MiB read, [share per profiler], program's median, lowest, highest, n)
        for line in out.splitlines():
            m = re.match(r"\s*([0-9.]+)\s+(.*?)\s+(-?[0-9.]+) \((-?[0-9.]+)-(-?[0-9.]+), (\d+) "
                         r"instances\) pair ", line)
            if m:
                shares = [float(x) for x in re.findall(r"(-?[0-9.]+) \([0-9.]+\)", m.group(2))]
                cls.rows.append((float(m.group(1)), shares, float(m.group(3)), float(m.group(4)),
                                 float(m.group(5)), int(m.group(6))))

    def test_every_pair_of_the_last_iteration_under_every_profiler(self):
        self.assertIn("launches measured: " + ", ".join(f"{n} 14" for n in NAMES), self.out)
        self.assertEqual([r[0] for r in self.rows], [8, 16, 24, 32, 48, 256, 16])
        for row in self.rows:
            self.assertEqual(len(row[1]), len(NAMES))
            self.assertEqual(row[5], 8)  # the eight measured iterations, not the warm-up

    def test_the_program_alone_lies_between_the_profilers_at_24_mib(self):
        _, shares, median, lowest, highest, _ = self.rows[2]
        ours, ncu = shares[0], shares[NAMES.index("ncu-app")]
        self.assertAlmostEqual(ours, 0.2343, places=4)
        self.assertAlmostEqual(ncu, 0.2586, places=4)
        self.assertAlmostEqual(median, 0.2487, places=4)
        self.assertLess(ours, median)
        self.assertGreater(ncu, median)
        self.assertLess(lowest, highest)

    def test_nothing_left_in_l2_means_every_profiler_agrees(self):
        for size, shares, median, *_ in self.rows:
            if size >= 48:
                for share in shares + [median]:
                    self.assertAlmostEqual(share, 1.0, delta=0.001)

    def test_kernel_replay_finds_nothing_its_restore_evicted(self):
        for size, shares, *_ in self.rows[1:]:
            for name in ("ours-kernel", "ncu-kernel"):
                self.assertGreater(shares[NAMES.index(name)], 0.999, (size, name))


class L2Share(unittest.TestCase):
    def test_dram_verdicts_say_how_much_came_from_l2(self):
        from profile_counters_compare import l2_share
        launch = {"details": {"metrics": {"dram__bytes_read.sum": 32.0e6,
                                          "lts__t_sectors_srcunit_tex_op_read.sum": 1.25e6}}}
        self.assertEqual(l2_share("dram__bytes_read.sum", launch), "; DRAM 0.80 of its L2 reads")
        self.assertEqual(l2_share("lts__t_sectors_srcunit_tex.sum", launch), "")
        self.assertEqual(l2_share("dram__bytes_read.sum", {"details": {"metrics": {}}}), "")


if __name__ == "__main__":
    unittest.main()
