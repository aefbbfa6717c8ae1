#!/usr/bin/env python3
"""CPU test of the kernel-identity comparison the *_torch_compare.py scripts share
(torch_reference.py: export_points, calls_per_call, short_kernel_list,
PointComparison; ctest: torch_compare_py). PyTorch is not needed: the timing, the
profile and NVML are replaced by stated results, so the test checks the matching, the rows
and the verdict against known answers. Standard library only."""
import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import torch_reference as ref  # noqa: E402

NVJET = "nvjet_sm90_hsh_256x128_64x4_2x1_v_bz_coopA_TNT"
OTHER = "void cutlass::Kernel2<cutlass_80_tensorop_h16816gemm_128x128_32x5_tn_align8>(Params)"
US = 1e-6


GRID, BLOCK = [132, 1, 1], [384, 1, 1]


def point(op, median_s, kernels, calls_per_sample=7, status="ok", busy_share=0.95, clock_hz=1.98e9, **params):
    return {"op": op, "precision": "fp16", "status": status, "params": dict(params, precision="fp16"),
            "timing": {"stream": {"median_s": median_s, "calls_per_sample": calls_per_sample},
                       "kernel_time_s": median_s and median_s * busy_share},
            "details": {"timing": {"sm_clock_hz": {"call": clock_hz, "stream": clock_hz, "graph": clock_hz}}},
            "kernels": [{"name": k, "grid": GRID, "block": BLOCK, "duration_s": 1e-6, "metrics": {}}
                        for k in kernels]}


def launches(*names, grid=GRID):
    return [(n, grid, BLOCK) for n in names]


class FakeTorch:
    """What PointComparison touches outside the timing and the profile."""
    __version__ = "0.fake"

    class backends:
        class cudnn:
            @staticmethod
            def version():
                return 91900

    class cuda:
        @staticmethod
        def get_device_name():
            return "Fake GPU"

        @staticmethod
        def synchronize():
            pass

        @staticmethod
        def empty_cache():
            pass


class Stated(ref.PointComparison):
    """PointComparison with each candidate's (seconds, launches, kernels' busy seconds,
    SM clock) stated, and the calls_per_sample it was asked to time with recorded."""

    def __init__(self, results):
        self.results, self.asked = results, []
        with contextlib.redirect_stdout(io.StringIO()):
            super().__init__(FakeTorch, "test")

    def torch_time(self, fn, calls_per_sample):
        self.asked.append(calls_per_sample)
        seconds, stated_launches, busy, *clock = self.results[fn()]
        if isinstance(seconds, Exception):
            raise seconds
        return ({"median_s": seconds, "sm_clock_hz": clock[0] if clock else 1.98e9}, stated_launches, busy,
                {"median_s": seconds})


class Timer:  # the real Timer needs CUDA events
    def __init__(self, torch, rule):
        pass


class SmClock:  # the real one needs NVML
    def __init__(self, torch):
        pass


ref.Timer, ref.SmClock = Timer, SmClock


def run_rows(comparison, rows):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for label, p, candidates in rows:
            comparison.compare(label, p, candidates)
        result = comparison.summary()
    return result, out.getvalue()


class KernelLists(unittest.TestCase):
    def test_launch_configs_compare_names_grids_and_blocks(self):
        bare = OTHER[len("void "):OTHER.index("(")]  # as another demangler may print it
        self.assertEqual(ref.launch_configs(launches(NVJET, OTHER)), ref.launch_configs(launches(bare, NVJET)))
        self.assertNotEqual(ref.launch_configs(launches(NVJET)), ref.launch_configs(launches(NVJET, grid=[66, 2, 1])))

    def test_one_call_out_of_repeated_calls(self):
        self.assertEqual(ref.calls_per_call(["a", "b", "a", "b", "a", "b"], 3), ["a", "b"])
        self.assertEqual(ref.calls_per_call(["a"], 1), ["a"])

    def test_calls_that_differ_keep_every_name(self):
        names = ["a", "b", "a", "c", "a", "b"]
        self.assertEqual(ref.calls_per_call(names, 3), names)
        self.assertEqual(ref.calls_per_call(["a", "b"], 3), ["a", "b"])

    def test_short_list_counts_and_normalises(self):
        text = ref.short_kernel_list([OTHER, OTHER, NVJET])
        self.assertEqual(text, "cutlass::Kernel2<cutlass_80_tensorop_h16816gemm_128x128_32x5_tn_align8> x2, "
                         + NVJET)
        self.assertEqual(ref.short_kernel_list([]), "-")


class ExportPoints(unittest.TestCase):
    def test_only_ok_points_of_the_wanted_ops_with_a_stream_time(self):
        doc = {"format": "timeroof-results", "schema_version": 3, "runs": [
            {"machine": {"gpu": {"name": "NVIDIA H100 80GB HBM3"}}, "points": [
                point("gemm", 10 * US, [NVJET], m=1),
                point("gemm", 10 * US, [NVJET], status="failed", m=2),
                point("attention_fwd", 10 * US, [NVJET], m=3),
                point("gemm_batched", None, [NVJET], m=4),
                point("gemm_batched", 20 * US, [NVJET], m=5)]}]}
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "export.json")
            with open(path, "w") as f:
                json.dump(doc, f)
            points = ref.export_points([path], lambda op: op.startswith("gemm"))
        self.assertEqual([p["params"]["m"] for p in points], [1, 5])
        self.assertEqual(points[0]["_gpu"], "NVIDIA H100 80GB HBM3")


class Verdict(unittest.TestCase):
    def test_counts_within_tolerance_only_where_the_kernels_are_the_same(self):
        c = Stated({"same_close": (103 * US, launches(NVJET), 100 * US),   # ratio 100/103: within 5%
                    "same_far": (80 * US, launches(NVJET), 78 * US),       # 1.25: same kernel, not within
                    "other_close": (100 * US, launches(OTHER), 99 * US)})  # within, but other kernels
        rows, text = run_rows(c, [
            ("a", point("gemm", 100 * US, [NVJET], calls_per_sample=3), [("", lambda: "same_close")]),
            ("b", point("gemm", 100 * US, [NVJET]), [("", lambda: "same_far")]),
            ("c", point("gemm", 100 * US, [NVJET]), [("", lambda: "other_close")])])
        self.assertEqual([r["same"] for r in rows], [True, True, False])
        self.assertAlmostEqual(rows[0]["ratio"], 100 / 103)
        self.assertEqual(c.asked, [3, 7, 7])  # timeroof's calls per sample of each point
        self.assertIn("verdict: T_stream within 5% of PyTorch's time on 1 of 2 shapes where the same kernels run "
                      "and neither side is host-bound", text)
        self.assertIn("other kernels (not judged): 1 of 3 shapes; within 5% anyway: 1", text)
        self.assertIn("    PyTorch:  cutlass::Kernel2<", text)  # the lists where they differ

    def test_a_later_candidate_with_the_same_kernels_is_the_row_judged(self):
        c = Stated({"default": (50 * US, launches(OTHER), 49 * US), "lt": (101 * US, launches(NVJET), 100 * US)})
        rows, text = run_rows(c, [("g", point("gemm", 100 * US, [NVJET]),
                                   [("", lambda: "default"), ("cuBLASLt", lambda: "lt")])])
        self.assertEqual(len(rows), 1)
        self.assertEqual((rows[0]["note"], rows[0]["same"]), ("cuBLASLt", True))
        self.assertIn("g [cuBLASLt]", text)
        self.assertIn("on 1 of 1 shapes", text)

    def test_the_first_candidate_stands_when_none_matches_and_failures_are_printed(self):
        c = Stated({"default": (50 * US, launches(OTHER), 10 * US),
                    "broken": (RuntimeError("cuDNN refused\nmore"), [], 0)})
        rows, text = run_rows(c, [("g", point("gemm", 100 * US, [NVJET]),
                                   [("", lambda: "default"), ("x", lambda: "broken")])])
        self.assertEqual((rows[0]["note"], rows[0]["same"], rows[0]["host_bound"]), ("", False, ["PyTorch"]))
        self.assertIn("PyTorch (x) failed: RuntimeError: cuDNN refused", text)
        self.assertIn("on 0 of 0 shapes", text)

    def test_host_bound_rows_on_either_side_are_not_judged(self):
        c = Stated({"host": (100 * US, launches(NVJET), 20 * US), "gpu": (100 * US, launches(NVJET), 99 * US)})
        rows, text = run_rows(c, [("h", point("gemm", 100 * US, [NVJET]), [("", lambda: "host")]),
                                  ("t", point("gemm", 100 * US, [NVJET], busy_share=0.5), [("", lambda: "gpu")])])
        self.assertEqual([r["host_bound"] for r in rows], [["PyTorch"], ["timeroof"]])
        self.assertIn("on 0 of 0 shapes", text)
        self.assertIn("a side host-bound (its kernels busy < 80% of its time: the ratio compares per-call host "
                      "costs; not judged): 2", text)

    def test_rows_at_the_same_clock_are_counted_apart(self):
        # 110 us at 1.5 GHz against 100 us at 1.98 GHz (the power limit), and 101 us
        # against 100 us, both near 1.98 GHz (1965 MHz is within 2% of 1980).
        c = Stated({"capped": (100 * US, launches(NVJET), 99 * US, 1.98e9),
                    "equal": (100 * US, launches(NVJET), 99 * US, 1.965e9)})
        rows, text = run_rows(c, [("p", point("gemm", 110 * US, [NVJET], clock_hz=1.5e9), [("", lambda: "capped")]),
                                  ("e", point("gemm", 101 * US, [NVJET]), [("", lambda: "equal")])])
        self.assertEqual([r["same_clock"] for r in rows], [False, True])
        self.assertIn("on 1 of 2 shapes", text)
        self.assertIn("of them at the same SM clock (NVML during the stream, within 2%): within 5% on 1 of 1", text)
        self.assertIn("1500/1980  yes (other SM clocks)", text)

    def test_other_grids_of_the_same_kernel_are_named(self):
        c = Stated({"regrid": (100 * US, launches(NVJET, grid=[66, 2, 1]), 99 * US)})
        rows, text = run_rows(c, [("r", point("gemm", 100 * US, [NVJET]), [("", lambda: "regrid")])])
        self.assertEqual((rows[0]["same"], rows[0]["same_launches"]), (True, False))
        self.assertIn("yes (other grid or block)", text)
        self.assertIn("timeroof grids: [(132, 1, 1)], PyTorch: [(66, 2, 1)]", text)


if __name__ == "__main__":
    unittest.main()
