#!/usr/bin/env python3
"""CPU test of timing_compare.py (ctest: timing_compare_py): matching timeroof points to
PyTorch cases, the ratios, the PASS/MISS judgement and the kernel-set comparison, on
synthetic export and reference documents. Standard library only."""
import copy
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import timing_compare as tc  # noqa: E402

US = 1e-6
CONV_KERNEL = ("void cutlass__5x_cudnn::Kernel<cutlass_tensorop_f16_s16816fprop_optimized_f16_64x64_32x4_nhwc>"
               "(cutlass_tensorop_f16_s16816fprop_optimized_f16_64x64_32x4_nhwc::Params)")
LSTM_STANDARD = ["void gemmSN_TN_kernel<float, 128, 16, 2, 4, 8, 9, false>(cublasGemmSmallNParams)",
                 "void elemWiseRNNcell<float, float, float, (cudnnRNNMode_t)2, (cudnnRNNBiasMode_t)2>(int, int)"]
LSTM_SMALL_H = ["void persistRNN_small_h_fwd<float, 16>(RNNPersistParams)"]


def conv_params(batch, precision="fp16", **extra):
    params = {"batch": batch, "channels": 64, "height": 112, "width": 112, "filters": 64, "filter": 3,
              "stride": 2, "pad": "same", "dilation": 1, "groups": 1, "layout": "nhwc",
              "algorithm": "heuristic", "math": "auto", "direction": "fwd", "precision": precision}
    params.update(extra)
    return params


def lstm_params(batch, precision="fp32", algorithm="standard"):
    return {"batch": batch, "seq_length": 16, "input_size": 32, "hidden_size": 16, "layers": 1,
            "bidirectional": 0, "pass": "inference", "precision": precision,
            "math": "fma_only" if precision == "fp32" else "tensor", "algorithm": algorithm}


def stats(median_s, calls_per_sample=1, converged=True):
    return {"median_s": median_s, "ci_low_s": median_s * 0.995, "ci_high_s": median_s * 1.005,
            "spread": 0.02, "min_s": median_s * 0.98, "max_s": median_s * 1.1, "samples": 40,
            "calls_per_sample": calls_per_sample, "converged": converged}


def point(op, precision, params, call, stream, graph, kernels, seq=0, status="ok", details=None):
    return {"seq": seq, "sweep": "s", "op": op, "params": params, "precision": precision,
            "math_mode": tc.resolved_math(precision, params.get("math")), "algorithm": "", "flops": 1.0,
            "min_bytes": 1.0, "status": status, "reason": "",
            "timing": {"call": stats(call) if call else None, "stream": stats(stream, 16) if stream else None,
                       "graph": stats(graph, 64) if graph else None, "issue": stats(5 * US),
                       "graph_unavailable": "" if graph else "capture failed: test",
                       "kernel_time_s": None, "launches": len(kernels), "api_time_s": None,
                       "launch_gap_s": None, "h2d_bytes": 0, "h2d_time_s": 0, "d2h_bytes": 0, "d2h_time_s": 0},
            "counters": {}, "kernels": [{"name": k, "grid": [1, 1, 1], "block": [1, 1, 1], "duration_s": 1e-6,
                                         "metrics": {}} for k in kernels],
            "details": details or {}}


def export(points, gpu="NVIDIA H100 80GB HBM3"):
    return {"format": "timeroof-results", "schema_version": 2,
            "runs": [{"uuid": "u", "git_sha": "abc", "machine": {"gpu": {"name": gpu, "versions": {"cudnn": "9.14.0"}}},
                      "points": points}]}


def torch_case(op, precision, params, call, stream, graph, kernels, copies=8, benchmark=False, status="ok"):
    return {"op": op, "precision": precision, "params": params, "cudnn_benchmark": benchmark, "status": status,
            "reason": "" if status == "ok" else "test",
            "timing": {"call": stats(call), "stream": stats(stream, 16), "graph": stats(graph, 64) if graph else None,
                       "issue": stats(10 * US), "graph_unavailable": "" if graph else "capture failed",
                       "graph_copies": copies},
            "kernel_names": list(kernels)}


def torch_doc(cases):
    return {"format": "timeroof-torch-reference", "schema_version": 1,
            "environment": {"gpu_name": "NVIDIA H100 80GB HBM3", "torch": "2.11.0", "cudnn_version": 91400,
                            "warnings": []},
            "cases": cases, "errors": []}


class KernelNames(unittest.TestCase):
    def test_argument_list_and_void_dropped(self):
        self.assertEqual(tc.normalize_kernel("void foo::bar<int, (cudnnRNNMode_t)2>(int, float*)"),
                         "foo::bar<int, (cudnnRNNMode_t)2>")
        self.assertEqual(tc.normalize_kernel("foo::bar<int, (cudnnRNNMode_t)2>"), "foo::bar<int, (cudnnRNNMode_t)2>")
        self.assertEqual(tc.normalize_kernel("std::enable_if<!(false), void>::type internal::gemvx::kernel<int>(P)"),
                         "std::enable_if<!(false), void>::type internal::gemvx::kernel<int>")
        self.assertEqual(tc.normalize_kernel("  void   k(int)  "), "k")
        self.assertEqual(tc.normalize_kernel("sm90_xmma_fprop_nhwc"), "sm90_xmma_fprop_nhwc")

    def test_sets_compared_counts_reported(self):
        timeroof = [LSTM_STANDARD[0]] + [LSTM_STANDARD[1]] * 16
        torch = [n.replace("(int, int)", "") for n in [LSTM_STANDARD[0]] + [LSTM_STANDARD[1]] * 15]
        result = tc.compare_kernels(timeroof, torch)
        self.assertIs(result["same"], True)
        self.assertFalse(result["counts_equal"])
        self.assertEqual((result["timeroof_launches"], result["torch_launches"]), (17, 16))

    def test_different_kernels_listed_each_side(self):
        result = tc.compare_kernels(LSTM_STANDARD, LSTM_SMALL_H)
        self.assertIs(result["same"], False)
        self.assertEqual(result["only_torch"], ["persistRNN_small_h_fwd<float, 16>"])
        self.assertEqual(len(result["only_timeroof"]), 2)

    def test_a_side_without_names_is_unknown(self):
        self.assertIsNone(tc.compare_kernels([], LSTM_SMALL_H)["same"])
        self.assertIsNone(tc.compare_kernels(LSTM_SMALL_H, [])["same"])


class Params(unittest.TestCase):
    def test_conv_same_padding_and_auto_math(self):
        a = tc.normalize_params("conv2d_fwd", "fp32", conv_params(4, "fp32"))
        self.assertEqual(a["pad"], 1)
        self.assertEqual(a["math"], "fma_only")
        b = tc.normalize_params("conv2d_fwd", "fp16", conv_params(4, filter=7))
        self.assertEqual((b["pad"], b["math"]), (3, "tensor"))

    def test_keys_missing_on_the_timeroof_side_are_not_compared(self):
        torch = tc.normalize_params("conv2d_fwd", "fp16", conv_params(4, cudnn_api="graph"))
        timeroof = tc.normalize_params("conv2d_fwd", "fp16", conv_params(4))
        self.assertTrue(tc.params_match(torch, timeroof))
        legacy = tc.normalize_params("conv2d_fwd", "fp16", conv_params(4, cudnn_api="legacy"))
        self.assertFalse(tc.params_match(torch, legacy))
        self.assertTrue(tc.params_match(torch, legacy, ignore=tc.RELAXABLE_KEYS))
        self.assertFalse(tc.params_match(torch, tc.normalize_params("conv2d_fwd", "fp16", conv_params(8))))

    def test_graph_copies_from_method_sentence_or_field(self):
        p = point("conv2d_fwd", "fp16", conv_params(1), 30 * US, 10 * US, 6 * US, [CONV_KERNEL],
                  details={"timing": {"graph": {"method": "the call captured 64 times into one CUDA graph"}}})
        self.assertEqual(tc.graph_copies_of(p), 64)
        p["details"] = {"timing": {"graph": {"copies_per_graph": 8, "nodes_per_call": 1}, "copies": "none"}}
        self.assertEqual(tc.graph_copies_of(p), 8)
        p["details"] = {"timing": {"copies": 3}}  # host<->device copies, not the graph's
        self.assertIsNone(tc.graph_copies_of(p))
        p["details"] = {}
        self.assertIsNone(tc.graph_copies_of(p))

    def test_schema_1_wall_time_reads_as_call(self):
        p = {"timing": {"wall_median_s": 3e-5, "wall_spread": 0.1, "repeats": 100}}
        self.assertEqual(tc.median_s(p, "call"), 3e-5)
        self.assertIsNone(tc.median_s(p, "stream"))


def conv_series(scale_stream=1.0, scale_graph=1.0, scale_call=1.0, n=20, off=()):
    """n conv points, all times >= 20 us, each scaled; points in `off` get a 10% change."""
    points = []
    for i in range(n):
        f = 1.10 if i in off else 1.0
        points.append(point("conv2d_fwd", "fp16", conv_params(i + 1), 100 * US * scale_call * f,
                            50 * US * scale_stream * f, 40 * US * scale_graph * f, [CONV_KERNEL], seq=i))
    return tc.prepare_points(points)


class Repeatability(unittest.TestCase):
    def test_share_at_the_target_passes_below_misses(self):
        run1 = conv_series()
        result = tc.repeatability(run1, conv_series(off={3}))  # 19 of 20 within: 95%
        self.assertEqual(result["times"]["stream"]["within"], 19)
        self.assertEqual(result["times"]["stream"]["verdict"], "PASS")
        result = tc.repeatability(run1, conv_series(off={3, 4}))  # 18 of 20: 90%
        self.assertEqual(result["times"]["stream"]["verdict"], "MISS")
        self.assertAlmostEqual(result["times"]["stream"]["share"], 0.9)
        worst = result["times"]["stream"]["worst"][0]
        self.assertAlmostEqual(worst["ratio"], 1.10)
        self.assertIn("batch=", worst["point"])

    def test_call_tolerance_is_wider(self):
        result = tc.repeatability(conv_series(), conv_series(scale_call=1.04, scale_stream=1.04, scale_graph=1.02))
        self.assertEqual(result["times"]["call"]["verdict"], "PASS")   # 4% <= 5%
        self.assertEqual(result["times"]["stream"]["verdict"], "MISS")  # 4% > 3%
        self.assertEqual(result["times"]["graph"]["verdict"], "PASS")  # 2% <= 3%

    def test_points_under_the_floor_do_not_count(self):
        run1 = conv_series()
        run2 = conv_series()
        for p in run1[:5] + run2[:5]:  # 5 points at 10 us, changing by 50%
            p["timing"]["stream"]["median_s"] = 10 * US
        for p in run2[:5]:
            p["timing"]["stream"]["median_s"] = 15 * US
        result = tc.repeatability(run1, run2)
        self.assertEqual(result["times"]["stream"]["eligible"], 15)
        self.assertEqual(result["times"]["stream"]["verdict"], "PASS")

    def test_no_eligible_points_is_a_miss(self):
        result = tc.repeatability([], [])
        self.assertEqual(result["times"]["call"]["verdict"], "MISS")

    def test_misses_that_moved_with_the_host_probe_are_counted(self):
        run1, run2 = conv_series(), conv_series(off={3, 4, 5})  # three misses, +10%
        for p in run1:
            p["details"] = {"timing": {"host_probe_s": [20 * US, 20 * US]}}
        for i, p in enumerate(run2):
            # point 3: the host slowed down with it; 4: the host sped up (the other
            # direction); 5: the host did not move (1% is within the probe's noise).
            probe = {3: 28 * US, 4: 15 * US, 5: 20.2 * US}.get(i, 20 * US)
            p["details"] = {"timing": {"host_probe_s": [probe, probe]}}
        times = tc.repeatability(run1, run2)["times"]["stream"]
        self.assertEqual(times["eligible"] - times["within"], 3)
        self.assertEqual(times["misses_with_host_speed"], 1)
        rows = {r["point"]: r for r in times["rows"]}
        explained = [r for r in times["rows"] if r["host_explained"]]
        self.assertEqual(len(explained), 1)
        self.assertAlmostEqual(explained[0]["host_ratio"], 1.4)
        self.assertTrue(all(r["host_ratio"] is not None for r in rows.values()))

    def test_intervals_that_do_not_hold_the_change_are_counted(self):
        # Intervals of +-0.5%: a 10% change lies outside both, a 1.5% one within the floor.
        run2 = conv_series(off={3, 4})
        for p in run2[:2]:
            p["timing"]["stream"]["median_s"] *= 1.015
            for bound in ("ci_low_s", "ci_high_s"):
                p["timing"]["stream"][bound] *= 1.015
        times = tc.repeatability(conv_series(), run2)["times"]["stream"]
        self.assertEqual(times["intervals"], {"judged": 20, "hold": 18})
        self.assertFalse(times["rows"][3]["interval_holds"])
        self.assertTrue(times["rows"][0]["interval_holds"])
        del run2[5]["timing"]["stream"]["ci_low_s"]  # an export without an interval
        times = tc.repeatability(conv_series(), run2)["times"]["stream"]
        self.assertEqual(times["intervals"]["judged"], 19)

    def test_neighbours_that_move_together_show_in_the_autocorrelation(self):
        together = tc.repeatability(conv_series(), conv_series(off=set(range(10))))
        self.assertGreater(together["times"]["stream"]["lag1_autocorrelation"], 0.8)
        alternating = tc.repeatability(conv_series(), conv_series(off=set(range(0, 20, 2))))
        self.assertLess(alternating["times"]["stream"]["lag1_autocorrelation"], -0.8)
        self.assertIsNone(tc.repeatability(conv_series(), conv_series())["times"]["stream"]
                          ["lag1_autocorrelation"])  # no change at all: nothing to correlate

    def test_points_without_a_probe_are_never_explained_by_it(self):
        times = tc.repeatability(conv_series(), conv_series(off={3}))["times"]["stream"]
        self.assertEqual(times["misses_with_host_speed"], 0)
        self.assertIsNone(times["rows"][3]["host_ratio"])


class WindowDrift(unittest.TestCase):
    def windowed(self, call_medians, stream_medians):
        windows = [{"at_s": i, "call": stats(c), "stream": stats(st)}
                   for i, (c, st) in enumerate(zip(call_medians, stream_medians))]
        return point("lstm_inference", "fp32", {"batch": 1}, call_medians[0], stream_medians[0],
                     10 * US, ["k"], details={"timing": {"windows": windows}})

    def test_slowest_over_fastest_window_per_point(self):
        points = [self.windowed([100 * US, 150 * US, 110 * US], [50 * US, 50 * US, 75 * US]),
                  self.windowed([100 * US, 100 * US, 100 * US], [40 * US, 44 * US, 40 * US]),
                  point("conv2d_fwd", "fp16", {"batch": 1}, 1e-3, 1e-3, 1e-3, ["k"])]
        drift = tc.window_drift(points)
        self.assertEqual(drift["call"]["points"], 2)
        self.assertAlmostEqual(drift["call"]["max"], 1.5)
        self.assertAlmostEqual(drift["call"]["median"], 1.25)
        self.assertAlmostEqual(drift["stream"]["max"], 1.5)
        self.assertAlmostEqual(drift["stream"]["median"], (1.5 + 1.1) / 2)

    def test_no_windows_no_drift(self):
        self.assertIsNone(tc.window_drift([point("conv2d_fwd", "fp16", {"batch": 1}, 1e-3, 1e-3,
                                                  1e-3, ["k"])]))


class AgainstTorch(unittest.TestCase):
    def doc(self, stream_ratio=1.0, graph_ratio=1.0, kernels=(CONV_KERNEL,)):
        cases = [torch_case("conv2d_fwd", "fp16", conv_params(i + 1, cudnn_api="graph"), 100 * US,
                            50 * US / stream_ratio, 40 * US / graph_ratio, kernels) for i in range(20)]
        return torch_doc(cases)

    def test_within_targets_pass(self):
        result = tc.against_torch(conv_series(), conv_series(), self.doc(1.02, 1.04))
        self.assertEqual(len(result["rows"]), 20)
        self.assertTrue(all(r["match"] == "exact" for r in result["rows"]))
        self.assertAlmostEqual(result["rows"][0]["ratio"]["stream"], 1.02)
        self.assertEqual(result["stream"]["verdict"], "PASS")
        self.assertEqual(result["graph"]["verdict"], "PASS")
        self.assertEqual(result["graph"]["judged"], 20)

    def test_stream_over_three_percent_misses(self):
        result = tc.against_torch(conv_series(), conv_series(), self.doc(1.04, 1.0))
        self.assertEqual(result["stream"]["verdict"], "MISS")
        self.assertEqual(result["stream"]["passed"], 0)

    def test_graph_off_by_more_than_five_percent_misses_either_way(self):
        self.assertEqual(tc.against_torch(conv_series(), conv_series(), self.doc(1.0, 0.94))["graph"]["verdict"],
                         "MISS")
        self.assertEqual(tc.against_torch(conv_series(), conv_series(), self.doc(1.0, 1.06))["graph"]["verdict"],
                         "MISS")

    def test_graph_judged_only_where_the_same_kernels_ran(self):
        doc = self.doc(1.0, 1.0)
        for c in doc["cases"][:3]:  # other kernels and twice as slow in the graph: not judged
            c["kernel_names"] = ["void other_kernel<half>(Params)"]
            c["timing"]["graph"]["median_s"] /= 2
        result = tc.against_torch(conv_series(), conv_series(), doc)
        self.assertEqual(result["graph"]["judged"], 17)
        self.assertEqual(result["graph"]["kernels_differ"], 3)
        self.assertEqual(result["graph"]["verdict"], "PASS")

    def test_timeroof_side_is_the_geometric_mean_of_the_runs(self):
        run2 = conv_series(scale_stream=1.21)
        result = tc.against_torch(conv_series(), run2, self.doc(1.0, 1.0))
        self.assertAlmostEqual(result["rows"][0]["ratio"]["stream"], 1.1)

    def test_relaxed_match_is_shown_not_judged(self):
        timeroof = tc.prepare_points([
            point("lstm_inference", "fp32", lstm_params(b, algorithm=alg), 300 * US, 250 * US if alg == "standard"
                  else 50 * US, 200 * US if alg == "standard" else 40 * US,
                  LSTM_STANDARD if alg == "standard" else LSTM_SMALL_H, seq=i)
            for i, (b, alg) in enumerate([(1, "standard"), (1, "persist_static_small_h")])])
        doc = torch_doc([torch_case("lstm_inference", "fp32", lstm_params(1, algorithm="persist_static_small_h"),
                                    200 * US, 50 * US, 40 * US, LSTM_SMALL_H)])
        result = tc.against_torch(timeroof, copy.deepcopy(timeroof), doc)
        by = {r["match"]: r for r in result["rows"]}
        self.assertEqual(set(by), {"exact", "relaxed"})
        self.assertEqual(by["relaxed"]["differs"], {"algorithm": ["standard", "persist_static_small_h"]})
        self.assertIs(by["relaxed"]["kernels"]["same"], False)
        self.assertIs(by["exact"]["kernels"]["same"], True)
        self.assertEqual((result["stream"]["judged"], result["graph"]["judged"]), (1, 1))
        self.assertEqual(result["stream"]["verdict"], "PASS")

    def test_other_precision_or_batch_never_matches(self):
        doc = torch_doc([torch_case("conv2d_fwd", "fp32", conv_params(1, "fp32"), 1e-4, 5e-5, 4e-5, [CONV_KERNEL]),
                         torch_case("conv2d_fwd", "fp16", conv_params(2048), 1e-4, 5e-5, 4e-5, [CONV_KERNEL])])
        result = tc.against_torch(conv_series(), conv_series(), doc)
        self.assertEqual(result["rows"], [])
        self.assertEqual(len(result["torch_cases_unmatched"]), 2)
        self.assertEqual(result["stream"]["verdict"], "MISS")  # nothing judged is no pass

    def test_failed_points_and_cases_are_left_out(self):
        run = conv_series(n=2)
        run[0]["status"] = "failed"
        doc = self.doc()
        doc["cases"][1]["status"] = "failed"
        result = tc.against_torch(run, copy.deepcopy(run), doc)
        self.assertEqual(result["rows"], [])
        self.assertEqual(result["torch_cases_not_ok"], 1)

    def test_benchmark_cases_are_compared_with_the_heuristic_pass_only(self):
        doc = self.doc()
        bench = torch_case("conv2d_fwd", "fp16", conv_params(1, cudnn_api="graph", algorithm="exhaustive"),
                           90 * US, 45 * US, 36 * US, [CONV_KERNEL], benchmark=True)
        doc["cases"].append(bench)
        result = tc.against_torch(conv_series(), conv_series(), doc)
        self.assertEqual(len(result["rows"]), 20)  # the benchmark case matched nothing of timeroof's
        rows = tc.benchmark_vs_heuristic(doc)
        self.assertEqual(len(rows), 1)
        self.assertAlmostEqual(rows[0]["ratio"]["stream"], 0.9)


BARE = """runner vs bare loop on NVIDIA H100 80GB HBM3 (3 rounds each, alternating; runner warm-up 3 calls and 20 ms)
point                                    operator   runner us    bare us runner/bare bare/bare back-to-back us
conv2d fp16 fwd batch 1                  same           26.10      25.90     +0.77%     1.20%          12.00  within 2%
    rounds runner/bare/bare again: [26.1/25.9/26.2 us, SM 1980/1980 MHz]
conv2d fp16 fwd batch 1                  separate       27.10      25.90     +4.63%     1.20%          12.00  OUTSIDE
lstm fp16  batch 64                      same          210.00     200.00     +5.00%     1.00%         150.00  OUTSIDE
same operator: 1 of 2 points within 2%; largest |runner/bare - 1| = 5.00%
separate operators: 0 of 1 points within 2%; largest |runner/bare - 1| = 4.63%
"""


BARE_PER_TIME = """runner vs bare loops on NVIDIA H100 80GB HBM3 (3 rounds each, alternating)
point                                    operator  time       runner us     bare us  runner/bare bare/bare
conv2d fp16 fwd batch 1                  same      T_call         11.62       11.86       -2.02%     0.54%  OUTSIDE
conv2d fp16 fwd batch 1                  same      T_stream        6.09        6.29       -3.08%     3.61%  within the bare loop's own noise
conv2d fp16 fwd batch 1                  same      T_graph         6.13        6.13       +0.10%     0.51%  within 2%
conv2d fp16 fwd batch 1                  separate  T_call         13.41       16.26      -17.56%     0.69%  OUTSIDE
conv2d fp32 fwd batch 32                 same      T_call        342.11      341.64       +0.14%     0.08%  within 2%
conv2d fp32 fwd batch 32                 same      T_stream      333.50      332.80       +0.21%     0.06%  within 2%
conv2d fp32 fwd batch 32                 same      T_graph       329.31      328.89       +0.13%     0.05%  within 2%
T_call same operator: 1 of 2 points within 2% of the bare loop; largest |runner/bare - 1| = 2.02%
T_graph separate operators: 6 of 8 points within 2%; largest |runner/bare - 1| = 3.60%
"""


class Bare(unittest.TestCase):
    def test_per_time_rows(self):
        result = tc.parse_bare(BARE_PER_TIME)
        self.assertEqual(len(result["rows"]), 7)
        self.assertEqual(result["same"]["judged"], 6)
        self.assertEqual(result["same"]["within"], 4)
        self.assertEqual(result["same"]["within_own_noise"], 1)
        self.assertEqual(result["by_time"]["T_graph"]["same"], {"judged": 2, "within": 2,
                                                                 "largest": result["by_time"]["T_graph"]["same"]["largest"]})
        self.assertEqual(result["by_time"]["T_call"]["separate"]["within"], 0)
        self.assertEqual(result["verdict"], "MISS")
        self.assertEqual([(s["time"], s["kind"]) for s in result["summaries"]],
                         [("T_call", "same operator"), ("T_graph", "separate operators")])
        fixed = BARE_PER_TIME.replace("-2.02%", "-1.02%").replace("-3.08%", "-1.08%")
        self.assertEqual(tc.parse_bare(fixed)["verdict"], "PASS")

    def test_rows_and_verdict(self):
        result = tc.parse_bare(BARE)
        self.assertEqual(result["same"]["judged"], 2)
        self.assertEqual(result["same"]["within"], 1)
        self.assertAlmostEqual(result["same"]["largest"], 0.05)
        self.assertEqual(result["verdict"], "MISS")
        self.assertEqual(result["summaries"][0]["total"], 2)
        self.assertEqual(result["rows"][0]["time"], "T_call")
        passing = BARE.replace("+5.00%", "+1.50%")
        self.assertEqual(tc.parse_bare(passing)["verdict"], "PASS")

    def test_unparseable_output_is_a_miss(self):
        result = tc.parse_bare("something else entirely\n")
        self.assertEqual(result["verdict"], "MISS")
        self.assertIn("no 'same operator' rows", result["reason"])


class EndToEnd(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def write(self, name, doc):
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            f.write(doc if isinstance(doc, str) else json.dumps(doc))
        return path

    def run_compare(self, *args):
        return subprocess.run([sys.executable, os.path.join(HERE, "timing_compare.py"), *args],
                              capture_output=True, text=True, timeout=120)

    def test_report_lines_exit_code_and_json(self):
        strip = lambda ps: [{k: v for k, v in p.items() if not k.startswith("_")} for p in ps]  # noqa: E731
        run1 = self.write("run1.json", export(strip(conv_series())))
        run2 = self.write("run2.json", export(strip(conv_series(off={1, 2}))))
        doc = AgainstTorch().doc(1.05, 1.0)
        torch = self.write("torch.json", doc)
        bare = self.write("bare.log", BARE)
        out = os.path.join(self.dir.name, "compare.json")
        proc = self.run_compare(run1, run2, torch, "--bare", bare, "--json", out)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        text = proc.stdout
        summary = text[text.index("== Summary"):].splitlines()[1:]
        verdicts = {line.split("  ")[0].strip(): line for line in summary}
        self.assertEqual(len(summary), 7)
        self.assertIn("MISS", verdicts["repeatability T_call within 5% (>= 95% of points)"])
        self.assertIn("PASS", [v for k, v in verdicts.items() if k.startswith("T_graph")][0])
        self.assertIn("MISS", [v for k, v in verdicts.items() if k.startswith("T_stream")][0])
        self.assertIn("MISS", [v for k, v in verdicts.items() if k.startswith("runner within")][0])
        for line in summary:
            self.assertRegex(line, r"\s(PASS|MISS|info)\s")
        with open(out) as f:
            saved = json.load(f)
        self.assertEqual(len(saved["torch"]["rows"]), 20)
        self.assertAlmostEqual(saved["torch"]["rows"][0]["ratio"]["stream"], 1.05)
        self.assertEqual(len(saved["repeatability"]["times"]["graph"]["rows"]), 20)

    def test_missing_inputs_still_report_with_exit_0(self):
        run1 = self.write("run1.json", export([]))
        proc = self.run_compare(run1, os.path.join(self.dir.name, "nope.json"), os.path.join(self.dir.name, "x.json"))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("input problem: timeroof run 2:", proc.stdout)
        self.assertIn("input problem: PyTorch reference:", proc.stdout)
        summary = proc.stdout[proc.stdout.index("== Summary"):]
        self.assertEqual(summary.count("MISS"), 6)

    def test_not_an_export_is_reported(self):
        bad = self.write("bad.json", {"format": "something"})
        proc = self.run_compare(bad, bad, bad)
        self.assertEqual(proc.returncode, 0)
        self.assertIn("is not a timeroof export", proc.stdout)
        self.assertIn("is not torch_reference.py output", proc.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=1)
