#!/usr/bin/env python3
"""The timing issue's benchmark as ratios: timeroof's three times per call against
themselves (two runs) and against PyTorch calling the same cuDNN operators.

    timing_compare.py RUN1.json RUN2.json TORCH.json [--bare runner_vs_bare.log]
                      [--json OUT.json] [--min-us 20]

RUN1/RUN2: `timeroof export` documents of the same points measured twice (format
"timeroof-results", points with timing.call / .stream / .graph TimeStats).
TORCH: the output of scripts/device/torch_reference.py (format
"timeroof-torch-reference"). --bare: the console output of bench/runner_vs_bare.
Standard library only; runs anywhere. A file that is missing or unreadable is
reported and the sections that need it say MISS; the exit code is 0 whenever a
report was printed (it is a report, not a gate), 1 only for a usage error.

Targets (issue 13, "Benchmark"):
  Repeatability  among points whose median is >= --min-us in either run, the share
                 whose run2/run1 ratio is within 3% (T_stream, T_graph) or 5%
                 (T_call) must be >= 95%. Informational: for how many points the
                 two runs' own 95% intervals hold the change (else they understate
                 it), and the lag-1 autocorrelation of the log ratios in sweep order
                 (neighbouring points moving together: the machine drifting).
  T_stream       <= 1.03 x PyTorch's back-to-back time per call, every point.
  T_graph        within 5% of PyTorch's CUDA-graph replay per call, every point
                 where the same kernels ran (sets of normalised kernel names);
                 points whose kernels differ are listed apart, not judged.
  T_call         / PyTorch's synchronized call: informational.
  Bare loop      runner_vs_bare: every "same operator" row within 2%.

Matching. A PyTorch case carries params in timeroof's names. It matches a
timeroof point with the same op and precision whose params agree on every key
both have (a key the timeroof point lacks is not compared; keys the PyTorch case
lacks are ignored). Before comparing, conv2d's pad "same" becomes its number
(dilation (filter - 1) / 2) and math "auto" becomes fma_only (fp32) or tensor.
An exact match is judged. A timeroof point with no exact match that matches once
`algorithm` and `cudnn_api` are ignored (e.g. timeroof's standard LSTM algorithm
against PyTorch's persist_static_small_h) is shown as a "relaxed" row: ratios for
the notes, never judged. The timeroof side of a PyTorch ratio is the geometric
mean of the two runs' medians (one run where the other lacks the point).
"""
import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
from collections import Counter

TIMES = ("call", "stream", "graph")
TIME_LABEL = {"call": "T_call", "stream": "T_stream", "graph": "T_graph"}
REPEAT_TOLERANCE = {"call": 0.05, "stream": 0.03, "graph": 0.03}
REPEAT_SHARE = 0.95
STREAM_TARGET = 1.03
GRAPH_TOLERANCE = 0.05
BARE_TOLERANCE = 0.02
RELAXABLE_KEYS = ("algorithm", "cudnn_api")
EXPORT_FORMAT = "timeroof-results"
TORCH_FORMAT = "timeroof-torch-reference"


# --------------------------------------------------------------------------
# Inputs


class InputError(Exception):
    """A file that cannot be used, with a one-line reason."""


def _read_json(path, what):
    if not path:
        raise InputError(f"{what}: not given")
    if not os.path.exists(path):
        raise InputError(f"{what}: {path} does not exist")
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise InputError(f"{what}: {path} is not readable JSON ({e})") from e


def load_export(path, what="timeroof export"):
    """Every point of every run in a `timeroof export` document, as dicts; each gets
    "_gpu" and "_cudnn" (its run's) for the report's header."""
    doc = _read_json(path, what)
    if not isinstance(doc, dict) or doc.get("format") != EXPORT_FORMAT:
        raise InputError(f"{what}: {path} is not a timeroof export (no \"format\": \"{EXPORT_FORMAT}\")")
    points = []
    for run in doc.get("runs", []):
        gpu = run.get("machine", {}).get("gpu", {})
        for p in run.get("points", []):
            p = dict(p)
            p["_gpu"] = gpu.get("name", "")
            p["_cudnn"] = gpu.get("versions", {}).get("cudnn", "")
            p["_git_sha"] = run.get("git_sha", "")
            points.append(p)
    return points


def load_torch(path):
    doc = _read_json(path, "PyTorch reference")
    if not isinstance(doc, dict) or doc.get("format") != TORCH_FORMAT:
        raise InputError(f"PyTorch reference: {path} is not torch_reference.py output "
                         f"(no \"format\": \"{TORCH_FORMAT}\")")
    return doc


# --------------------------------------------------------------------------
# Points, params and times


def resolved_math(precision, math_mode):
    if math_mode in (None, "", "auto"):
        return "fma_only" if precision == "fp32" else "tensor"
    return math_mode


def normalize_params(op, precision, params):
    """Params in one canonical form, so equal configurations compare equal."""
    out = {}
    for key, value in (params or {}).items():
        if isinstance(value, str):
            value = value.strip().lower()
        if isinstance(value, bool):
            value = int(value)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        out[key] = value
    if op.startswith("conv2d") and out.get("pad") == "same":
        out["pad"] = int(out.get("dilation", 1)) * (int(out.get("filter", 1)) - 1) // 2
    if "math" in out or op.startswith(("conv2d", "lstm")):
        out["math"] = resolved_math(precision, out.get("math"))
    if "precision" in out:
        out["precision"] = precision
    return out


def params_match(torch_params, timeroof_params, ignore=()):
    for key, value in torch_params.items():
        if key in ignore or key not in timeroof_params:
            continue
        if timeroof_params[key] != value:
            return False
    return True


def full_key(point):
    params = point["_params"]
    return (point.get("op", ""), point.get("precision", ""),
            tuple(sorted((k, json.dumps(v, sort_keys=True)) for k, v in params.items())))


def prepare_points(points):
    """Adds "_params" (normalised) to each point; keeps every status."""
    for p in points:
        p["_params"] = normalize_params(p.get("op", ""), p.get("precision", ""), p.get("params", {}))
    return points


def time_stats(point, kind):
    """The TimeStats dict of `kind` (call, stream, graph, issue) or None. Reads schema 1
    exports too (wall_median_s: the synchronized call)."""
    timing = point.get("timing") or {}
    stats = timing.get(kind)
    if isinstance(stats, dict) and stats.get("median_s") is not None:
        return stats
    if kind == "call" and "call" not in timing and timing.get("wall_median_s") is not None:
        return {"median_s": timing["wall_median_s"], "spread": timing.get("wall_spread", 0),
                "samples": timing.get("repeats", 0), "calls_per_sample": 1, "converged": None}
    return None


def median_s(point, kind):
    stats = time_stats(point, kind)
    return float(stats["median_s"]) if stats else None


def mean_s(point, kind):
    """The mean of the samples (TimeStats.mean_s), where the export has it."""
    stats = time_stats(point, kind)
    value = stats.get("mean_s") if stats else None
    return float(value) if isinstance(value, (int, float)) and value > 0 else None


def varying_keys(points):
    """Per (op, precision): the param keys whose value differs between its points,
    the ones a label needs."""
    values = {}
    for p in points:
        group = values.setdefault((p.get("op"), p.get("precision")), {})
        for k, v in p["_params"].items():
            group.setdefault(k, set()).add(json.dumps(v, sort_keys=True))
    return {g: [k for k, v in keys.items() if len(v) > 1 and k != "precision"] for g, keys in values.items()}


def label(point, keys_by_group):
    parts = [point.get("op", "?"), point.get("precision", "?")]
    params = point.get("_params", {})
    keys = set(keys_by_group.get((point.get("op"), point.get("precision")), [])) | {"batch"}
    ordered = ["batch"] + sorted(k for k in keys if k != "batch")
    for k in ordered:
        if k in params:
            parts.append(f"{k}={params[k]}")
    return " ".join(parts)


# --------------------------------------------------------------------------
# Kernel names


_DEMANGLED = {}


def _demangle(names):
    """c++filt for names still mangled (_Z...), where c++filt exists."""
    todo = [n for n in names if n.startswith("_Z") and n not in _DEMANGLED]
    if todo and shutil.which("c++filt"):
        try:
            out = subprocess.run(["c++filt"], input="\n".join(todo), capture_output=True,
                                 text=True, timeout=20).stdout.splitlines()
            if len(out) == len(todo):
                _DEMANGLED.update(zip(todo, out))
        except (OSError, subprocess.SubprocessError):
            pass
    return [_DEMANGLED.get(n, n) for n in names]


def normalize_kernel(name):
    """A kernel name without its argument list, its leading `void` and extra spaces:
    CUPTI (timeroof) and Kineto (PyTorch) demangle the same symbol alike, but one
    may keep the parameter list the other drops."""
    s = " ".join(str(name).split())
    if s.endswith(")"):
        depth = 0
        for i in range(len(s) - 1, -1, -1):
            if s[i] == ")":
                depth += 1
            elif s[i] == "(":
                depth -= 1
                if depth == 0:
                    if i > 0:  # keep a name that is only "(...)"
                        s = s[:i].rstrip()
                    break
    if s.startswith("void "):
        s = s[5:]
    return s


def kernel_names(names):
    return [normalize_kernel(n) for n in _demangle([str(n) for n in names])]


def compare_kernels(timeroof_names, torch_names):
    """{"same": True/False (sets of normalised names equal), None where a side has no
    kernel names (not profiled: nothing to judge by), "only_timeroof": [...],
    "only_torch": [...], "counts_equal": bool, "timeroof_launches": n, "torch_launches": n}."""
    a, b = Counter(kernel_names(timeroof_names)), Counter(kernel_names(torch_names))
    return {
        "same": (set(a) == set(b)) if a and b else None,
        "only_timeroof": sorted(set(a) - set(b)),
        "only_torch": sorted(set(b) - set(a)),
        "counts_equal": a == b,
        "timeroof_launches": sum(a.values()),
        "torch_launches": sum(b.values()),
    }


def point_kernel_names(point):
    return [k.get("name", "") for k in point.get("kernels", []) if isinstance(k, dict)]


# --------------------------------------------------------------------------
# Repeatability


HOST_PROBES = {"compute": "host_probe_s", "memory": "host_memory_probe_s",
               "kernel": "host_kernel_probe_s"}


def host_probe_s(point, key="host_probe_s"):
    """A host speed probe around the point's timing (details.timing.<key>: seconds of
    a fixed workload before and after; host_probe_s the CPU core's, host_memory_probe_s
    the memory system's, host_kernel_probe_s the OS's), their mean; None if absent."""
    probe = ((point.get("details") or {}).get("timing") or {}).get(key)
    if isinstance(probe, list):
        values = [v for v in probe if isinstance(v, (int, float)) and v > 0]
        return sum(values) / len(values) if values else None
    return probe if isinstance(probe, (int, float)) and probe > 0 else None


def steal_s(point):
    """Seconds the hypervisor took from the measuring core during the point's timing
    (details.timing.steal_s); None if absent."""
    steal = ((point.get("details") or {}).get("timing") or {}).get("steal_s")
    return steal if isinstance(steal, (int, float)) and steal >= 0 else None


HOST_MOVED = 0.05  # a probe ratio beyond +-5% means the host ran at another speed
INTERVAL_FLOOR = 0.01  # a change this small counts as held by any interval


def interval_holds(p, q, kind):
    """Whether the two runs' own 95% intervals of `kind` say they may be equal: the
    ratio's interval (run 2's low over run 1's high .. high over low) holds 1 within
    INTERVAL_FLOOR. Two runs of one commit should: else the intervals understate.
    None where an export has no interval."""
    a, b = time_stats(p, kind), time_stats(q, kind)
    bounds = [s.get(k) if s else None for s in (a, b) for k in ("ci_low_s", "ci_high_s")]
    if any(not isinstance(v, (int, float)) or v <= 0 for v in bounds):
        return None
    low1, high1, low2, high2 = bounds
    return low2 / high1 <= 1 + INTERVAL_FLOOR and high2 / low1 >= 1 - INTERVAL_FLOOR


def lag1_autocorrelation(values):
    """Of a series (log ratios in sweep order): near 0 when each point moves on its own,
    high when neighbours move together (the machine drifting over seconds)."""
    if len(values) < 3:
        return None
    mean = statistics.fmean(values)
    total = sum((v - mean) ** 2 for v in values)
    if total == 0:
        return None
    return sum((a - mean) * (b - mean) for a, b in zip(values, values[1:])) / total


def window_drift(points):
    """The host's drift inside one run, from the points timed in several windows
    (details.timing.windows, runner.hpp "Host-side windows"): per host-side time,
    how many points and the median, p90 and largest ratio of a point's slowest
    window median to its fastest. None without windowed points."""
    spreads = {"call": [], "stream": []}
    for p in points:
        windows = ((p.get("details") or {}).get("timing") or {}).get("windows") or []
        if len(windows) < 2:
            continue
        for kind in spreads:
            medians = [(w.get(kind) or {}).get("median_s") for w in windows]
            medians = [m for m in medians if isinstance(m, (int, float)) and m > 0]
            if len(medians) >= 2:
                spreads[kind].append(max(medians) / min(medians))
    if not any(spreads.values()):
        return None
    result = {}
    for kind, ratios in spreads.items():
        if ratios:
            ordered = sorted(ratios)
            result[kind] = {"points": len(ordered), "median": statistics.median(ordered),
                            "p90": ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))],
                            "max": ordered[-1]}
    return result


def moved_with_host(ratio, host_ratio):
    """A repeatability miss the host's own speed explains: the probe moved by more
    than HOST_MOVED in the same direction as the time."""
    return (host_ratio is not None and abs(host_ratio - 1) > HOST_MOVED
            and (ratio - 1) * (host_ratio - 1) > 0)


def repeatability(run1, run2, min_s=20e-6):
    """Per time: eligible points (ok in both, median >= min_s in either run), those
    within the tolerance, the share, the verdict, and every ratio."""
    second = {full_key(p): p for p in run2 if p.get("status") == "ok"}
    keys = varying_keys([p for p in run1 + run2])
    result = {"min_s": min_s, "times": {}, "not_in_both": 0, "not_ok": 0}
    pairs = []
    for p in run1:
        if p.get("status") != "ok":
            result["not_ok"] += 1
            continue
        q = second.get(full_key(p))
        if q is None:
            result["not_in_both"] += 1
            continue
        pairs.append((p, q))
    for kind in TIMES:
        tol = REPEAT_TOLERANCE[kind]
        rows, eligible, within, not_converged, host_misses, steal_misses = [], 0, 0, 0, 0, 0
        for p, q in pairs:
            a, b = median_s(p, kind), median_s(q, kind)
            if a is None or b is None or a <= 0 or b <= 0:
                continue
            for s in (time_stats(p, kind), time_stats(q, kind)):
                if s.get("converged") is False:
                    not_converged += 1
            ratio = b / a
            ok = abs(ratio - 1) <= tol
            counted = max(a, b) >= min_s
            probe1, probe2 = host_probe_s(p), host_probe_s(q)
            host_ratio = probe2 / probe1 if probe1 and probe2 else None
            probe_ratios = {}
            for name, key in HOST_PROBES.items():
                v1, v2 = host_probe_s(p, key), host_probe_s(q, key)
                if v1 and v2:
                    probe_ratios[name] = v2 / v1
            host_explained = not ok and any(moved_with_host(ratio, r) for r in probe_ratios.values())
            steals = [v for v in (steal_s(p), steal_s(q)) if v is not None]
            stolen = not ok and any(v > 0 for v in steals)
            rows.append({"point": label(p, keys), "op": p.get("op"), "precision": p.get("precision"),
                         "params": p["_params"], "run1_s": a, "run2_s": b, "ratio": ratio,
                         "within": ok, "eligible": counted, "host_ratio": host_ratio,
                         "interval_holds": interval_holds(p, q, kind),
                         "host_explained": host_explained, "probe_ratios": probe_ratios,
                         "steal_s": steals, "stolen": stolen})
            if counted:
                eligible += 1
                within += ok
                host_misses += host_explained
                steal_misses += stolen
        share = within / eligible if eligible else None
        verdict = "PASS" if share is not None and share >= REPEAT_SHARE else "MISS"
        # The same points judged by their means (informational): a bimodal host-bound
        # time's median jumps between its levels, its mean moves with the mixture.
        by_mean = [(mean_s(p, kind), mean_s(q, kind)) for p, q in pairs
                   if (median_s(p, kind) or 0) > 0 and (median_s(q, kind) or 0) > 0
                   and max(median_s(p, kind), median_s(q, kind)) >= min_s]
        by_mean = [(a, b) for a, b in by_mean if a and b]
        mean_within = sum(abs(b / a - 1) <= tol for a, b in by_mean)
        worst = sorted((r for r in rows if r["eligible"]), key=lambda r: -abs(math.log(r["ratio"])))
        judged = [r["interval_holds"] for r in rows if r["eligible"] and r["interval_holds"] is not None]
        result["times"][kind] = {"tolerance": tol, "eligible": eligible, "within": within,
                                 "share": share, "target_share": REPEAT_SHARE, "verdict": verdict,
                                 "not_converged_samples": not_converged,
                                 "misses_with_host_speed": host_misses,
                                 "misses_with_steal": steal_misses,
                                 "by_mean": {"eligible": len(by_mean), "within": mean_within},
                                 "intervals": {"judged": len(judged), "hold": sum(judged)},
                                 "lag1_autocorrelation": lag1_autocorrelation(
                                     [math.log(r["ratio"]) for r in rows if r["eligible"]]),
                                 "rows": rows,
                                 "worst": worst[:5]}
    return result


# --------------------------------------------------------------------------
# Against PyTorch


def _geomean(values):
    values = [v for v in values if v is not None and v > 0]
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def graph_copies_of(point):
    """Calls captured per graph, where the export says it: details.timing.graph's
    copies_per_graph (or graph_copies, calls_per_graph), or the method sentence
    "captured N times into one CUDA graph"."""
    found = []

    def walk(node, key=""):
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, k)
        elif isinstance(node, list):
            for v in node:
                walk(v, key)
        elif isinstance(node, str):
            m = re.search(r"captured (\d+) times? into one CUDA graph", node)
            if m:
                found.append(int(m.group(1)))
        elif isinstance(node, int) and not isinstance(node, bool):
            if re.fullmatch(r"copies_per_graph|graph_copies|calls_per_graph", key):
                found.append(node)

    walk(point.get("details", {}))
    return found[0] if found else None


def torch_cases(doc, benchmark=False):
    cases = []
    for c in doc.get("cases", []):
        if bool(c.get("cudnn_benchmark", False)) != benchmark:
            continue
        c = dict(c)
        c["_params"] = normalize_params(c.get("op", ""), c.get("precision", ""), c.get("params", {}))
        cases.append(c)
    return cases


def against_torch(run1, run2, torch_doc):
    """Rows (one per timeroof point with a PyTorch counterpart) and the three verdicts."""
    runs = [run1, run2]
    by_key = {}
    order = []
    for r, points in enumerate(runs):
        for p in points:
            if p.get("status") != "ok":
                continue
            k = full_key(p)
            if k not in by_key:
                by_key[k] = [None, None]
                order.append(k)
            by_key[k][r] = p
    keys = varying_keys([p for pair in by_key.values() for p in pair if p])
    cases = [c for c in torch_cases(torch_doc) if c.get("status") == "ok"]
    skipped_cases = [c for c in torch_cases(torch_doc) if c.get("status") != "ok"]
    rows = []
    matched_cases = set()
    for k in order:
        pair = by_key[k]
        p = pair[0] or pair[1]
        exact = [c for c in cases if c.get("op") == p.get("op") and c.get("precision") == p.get("precision")
                 and params_match(c["_params"], p["_params"])]
        relaxed = []
        if not exact:
            relaxed = [c for c in cases
                       if c.get("op") == p.get("op") and c.get("precision") == p.get("precision")
                       and params_match(c["_params"], p["_params"], ignore=RELAXABLE_KEYS)]
        for c, how in [(c, "exact") for c in exact] + [(c, "relaxed") for c in relaxed[:1]]:
            if how == "exact":
                matched_cases.add(id(c))
            row = {"point": label(p, keys), "op": p.get("op"), "precision": p.get("precision"),
                   "params": p["_params"], "match": how, "timeroof": {}, "torch": {}, "ratio": {},
                   "runs": sum(1 for q in pair if q)}
            if how == "relaxed":
                row["differs"] = {key: [p["_params"].get(key), c["_params"].get(key)]
                                  for key in RELAXABLE_KEYS
                                  if key in p["_params"] and key in c["_params"]
                                  and p["_params"][key] != c["_params"][key]}
            ct = c.get("timing") or {}
            for kind in TIMES:
                mine = _geomean([median_s(q, kind) for q in pair if q])
                stats = ct.get(kind)
                theirs = float(stats["median_s"]) if isinstance(stats, dict) and stats.get("median_s") else None
                row["timeroof"][kind] = mine
                row["torch"][kind] = theirs
                row["ratio"][kind] = mine / theirs if mine and theirs else None
            row["timeroof_graph_unavailable"] = (p.get("timing") or {}).get("graph_unavailable", "")
            row["torch_graph_unavailable"] = ct.get("graph_unavailable", "")
            row["torch_graph_copies"] = ct.get("graph_copies")
            tg = time_stats(p, "graph")
            row["timeroof_graph_calls_per_sample"] = tg.get("calls_per_sample") if tg else None
            row["timeroof_graph_copies"] = graph_copies_of(p)
            row["kernels"] = compare_kernels(point_kernel_names(p), c.get("kernel_names", []))
            row["torch_memory_operations"] = [m.get("name", "") for m in c.get("memory_operations", [])
                                              if isinstance(m, dict)]
            rows.append(row)

    exact_rows = [r for r in rows if r["match"] == "exact"]
    stream_rows = [r for r in exact_rows if r["ratio"]["stream"] is not None]
    stream_pass = [r for r in stream_rows if r["ratio"]["stream"] <= STREAM_TARGET]
    graph_judged = [r for r in exact_rows if r["ratio"]["graph"] is not None and r["kernels"]["same"] is True]
    graph_pass = [r for r in graph_judged if abs(r["ratio"]["graph"] - 1) <= GRAPH_TOLERANCE]
    graph_differ = [r for r in exact_rows if r["kernels"]["same"] is False]
    graph_unknown = [r for r in exact_rows if r["kernels"]["same"] is None]
    graph_missing = [r for r in exact_rows if r["kernels"]["same"] is True and r["ratio"]["graph"] is None]
    call_ratios = [r["ratio"]["call"] for r in exact_rows if r["ratio"]["call"] is not None]

    def verdict(passed, judged):
        return "PASS" if judged and len(passed) == len(judged) else "MISS"

    unmatched = [c for c in cases if id(c) not in matched_cases]
    return {
        "rows": rows,
        "stream": {"target": STREAM_TARGET, "judged": len(stream_rows), "passed": len(stream_pass),
                   "verdict": verdict(stream_pass, stream_rows),
                   "kernels_differ_among_misses": sum(1 for r in stream_rows
                                                      if r["ratio"]["stream"] > STREAM_TARGET
                                                      and r["kernels"]["same"] is False),
                   "worst": max(stream_rows, key=lambda r: r["ratio"]["stream"], default=None)},
        "graph": {"tolerance": GRAPH_TOLERANCE, "judged": len(graph_judged), "passed": len(graph_pass),
                  "verdict": verdict(graph_pass, graph_judged), "kernels_differ": len(graph_differ),
                  "no_graph_time": len(graph_missing), "kernels_unknown": len(graph_unknown),
                  "worst": max(graph_judged, key=lambda r: abs(r["ratio"]["graph"] - 1), default=None)},
        "call": {"count": len(call_ratios),
                 "median": statistics.median(call_ratios) if call_ratios else None,
                 "min": min(call_ratios, default=None), "max": max(call_ratios, default=None)},
        "torch_cases": len(cases), "torch_cases_not_ok": len(skipped_cases),
        "torch_cases_unmatched": [{"op": c.get("op"), "precision": c.get("precision"),
                                   "params": c.get("params")} for c in unmatched],
        "torch_cases_skipped": [{"op": c.get("op"), "precision": c.get("precision"),
                                 "batch": (c.get("params") or {}).get("batch"), "status": c.get("status"),
                                 "reason": c.get("reason", "")} for c in skipped_cases],
    }


def benchmark_vs_heuristic(torch_doc):
    """PyTorch with cudnn.benchmark=True against its own heuristic pass, per shape."""
    heur = torch_cases(torch_doc, benchmark=False)
    rows = []
    for c in torch_cases(torch_doc, benchmark=True):
        if c.get("status") != "ok":
            continue
        ignore = ("algorithm",)
        base = [h for h in heur if h.get("status") == "ok" and h.get("op") == c.get("op")
                and h.get("precision") == c.get("precision")
                and params_match(c["_params"], h["_params"], ignore=ignore)
                and params_match(h["_params"], c["_params"], ignore=ignore)]
        if not base:
            continue
        h = base[0]
        row = {"op": c.get("op"), "precision": c.get("precision"),
               "batch": c["_params"].get("batch"), "ratio": {},
               "kernels": compare_kernels(h.get("kernel_names", []), c.get("kernel_names", []))}
        for kind in TIMES:
            a, b = (h.get("timing") or {}).get(kind), (c.get("timing") or {}).get(kind)
            row["ratio"][kind] = (b["median_s"] / a["median_s"]
                                  if isinstance(a, dict) and isinstance(b, dict)
                                  and a.get("median_s") and b.get("median_s") else None)
        rows.append(row)
    return rows


# --------------------------------------------------------------------------
# runner_vs_bare


_BARE_ROW = re.compile(r"^(?P<label>\S.*?)\s+(?P<kind>same|separate)\s+(?:(?P<time>T_[a-z]+)\s+)?"
                       r"(?P<runner>[\d.]+)\s+(?P<bare>[\d.]+)\s+(?P<ratio>[+-]?[\d.]+)%\s+"
                       r"(?P<noise>[\d.]+)%(?P<rest>.*)$")
_BARE_SUMMARY = re.compile(r"^(?:(?P<time>T_[a-z]+) )?(?P<kind>same operator|separate operators): (?P<within>\d+) "
                           r"of (?P<total>\d+) points within [\d.]+%.*=\s*(?P<largest>[\d.]+)%")


def parse_bare(text):
    """Rows and summaries of runner_vs_bare's output, in its per-time form
    ("<point> same|separate T_call|T_stream|T_graph runner bare ratio% noise% verdict")
    or its older single-time form (no time column: T_call). The verdict judges the
    same-operator rows (the runner's timing pass against a bare loop on one prepared
    operator): PASS when every one of them is within 2%."""
    rows, summaries = [], []
    for line in text.splitlines():
        m = _BARE_ROW.match(line.strip())
        if m:
            rest = m.group("rest").strip()
            rows.append({"point": m.group("label").strip(), "kind": m.group("kind"),
                         "time": m.group("time") or "T_call",
                         "runner_us": float(m.group("runner")), "bare_us": float(m.group("bare")),
                         "ratio": 1 + float(m.group("ratio")) / 100,
                         "noise": float(m.group("noise")) / 100,
                         "within_own_noise": "own noise" in rest})
            continue
        m = _BARE_SUMMARY.match(line.strip())
        if m:
            summaries.append({"time": m.group("time") or "T_call", "kind": m.group("kind"),
                              "within": int(m.group("within")), "total": int(m.group("total")),
                              "largest": float(m.group("largest")) / 100})
    result = {"rows": rows, "summaries": summaries, "by_time": {}}
    for name in ("same", "separate"):
        group = [r for r in rows if r["kind"] == name]
        within = [r for r in group if abs(r["ratio"] - 1) < BARE_TOLERANCE]
        result[name] = {"judged": len(group), "within": len(within),
                        "largest": max((abs(r["ratio"] - 1) for r in group), default=None),
                        "within_own_noise": sum(1 for r in group if r["within_own_noise"]
                                                and abs(r["ratio"] - 1) >= BARE_TOLERANCE)}
        for time_name in sorted({r["time"] for r in group}):
            part = [r for r in group if r["time"] == time_name]
            result["by_time"].setdefault(time_name, {})[name] = {
                "judged": len(part), "within": sum(1 for r in part if abs(r["ratio"] - 1) < BARE_TOLERANCE),
                "largest": max(abs(r["ratio"] - 1) for r in part)}
    same = [r for r in rows if r["kind"] == "same"]
    result["verdict"] = "PASS" if same and result["same"]["within"] == len(same) else "MISS"
    if not same:
        result["reason"] = "no 'same operator' rows found in the runner_vs_bare output"
    return result


# --------------------------------------------------------------------------
# Report


def us(seconds, width=8):
    return f"{seconds * 1e6:{width}.1f}" if seconds else f"{'-':>{width}}"


def x(ratio, width=6):
    return f"{ratio:{width}.3f}" if ratio else f"{'-':>{width}}"


def short(name, n=70):
    return name if len(name) <= n else name[:n - 3] + "..."


def cudnn_major_minor(version):
    """(major, minor) of "9.14.0" or of cuDNN's integer 91400 (9 x 10000 + 14 x 100 + 0)."""
    if version is None or version == "":
        return None
    text = str(version)
    m = re.match(r"^(\d+)\.(\d+)", text)
    if m:
        return int(m.group(1)), int(m.group(2))
    if text.isdigit():
        v = int(text)
        return (v // 10000, v % 10000 // 100) if v >= 10000 else (v // 1000, v % 1000 // 100)
    return None


def build_report(args):
    report = {"inputs": {}, "problems": []}
    loaded = {}
    for key, path, loader in (("run1", args.run1, load_export), ("run2", args.run2, load_export)):
        try:
            loaded[key] = prepare_points(loader(path, f"timeroof run {key[-1]}"))
            report["inputs"][key] = {"path": path, "points": len(loaded[key])}
        except InputError as e:
            loaded[key] = None
            report["problems"].append(str(e))
    torch_doc = None
    try:
        torch_doc = load_torch(args.torch)
        report["inputs"]["torch"] = {"path": args.torch, "cases": len(torch_doc.get("cases", [])),
                                     "environment": torch_doc.get("environment", {}),
                                     "errors": torch_doc.get("errors", [])}
    except InputError as e:
        report["problems"].append(str(e))
    run1, run2 = loaded["run1"] or [], loaded["run2"] or []
    report["timeroof"] = {
        "gpu": next((p["_gpu"] for p in run1 + run2 if p.get("_gpu")), ""),
        "cudnn": next((p["_cudnn"] for p in run1 + run2 if p.get("_cudnn")), ""),
        "git_sha": next((p["_git_sha"] for p in run1 + run2 if p.get("_git_sha")), ""),
        "status_counts": dict(Counter(p.get("status", "?") for p in run1 + run2)),
    }
    report["repeatability"] = (repeatability(run1, run2, args.min_us * 1e-6)
                               if loaded["run1"] is not None and loaded["run2"] is not None else None)
    report["window_drift"] = {key: window_drift(loaded[key] or []) for key in ("run1", "run2")}
    report["torch"] = (against_torch(run1, run2, torch_doc)
                       if torch_doc is not None and (run1 or run2) else None)
    report["torch_benchmark"] = benchmark_vs_heuristic(torch_doc) if torch_doc is not None else []
    report["bare"] = None
    if args.bare:
        try:
            with open(args.bare) as f:
                report["bare"] = parse_bare(f.read())
            report["bare"]["path"] = args.bare
        except OSError as e:
            report["bare"] = {"verdict": "MISS", "reason": f"{args.bare}: {e}", "rows": []}
    return report


def render(report):
    out = []
    w = out.append
    tr = report["timeroof"]
    env = report["inputs"].get("torch", {}).get("environment", {})
    w(f"timeroof: {tr['gpu'] or '?'}, cuDNN {tr['cudnn'] or '?'}, git {tr['git_sha'][:12] or '?'}; "
      f"points by status (both runs): {tr['status_counts']}")
    if env:
        w(f"PyTorch:  {env.get('gpu_name', '?')}, torch {env.get('torch', '?')}, "
          f"cuDNN {env.get('cudnn_version', '?')} ({env.get('cudnn_library', '?')}), "
          f"driver {env.get('driver', '?')}")
        t_cudnn, p_cudnn = cudnn_major_minor(tr["cudnn"]), cudnn_major_minor(env.get("cudnn_version"))
        if t_cudnn and p_cudnn and t_cudnn != p_cudnn:
            w(f"note: cuDNN differs (timeroof {tr['cudnn']}, PyTorch {env.get('cudnn_version')}): "
              "kernel choices may differ")
        for warning in env.get("warnings", []):
            w(f"PyTorch environment warning: {warning}")
    for problem in report["problems"]:
        w(f"input problem: {problem}")
    for err in report["inputs"].get("torch", {}).get("errors", []):
        w(f"PyTorch reference error: {err}")
    summary = []

    # Repeatability
    w("")
    w("== Repeatability: run 2 / run 1 per point (points with median >= "
      f"{(report['repeatability'] or {}).get('min_s', 20e-6) * 1e6:.0f} us in either run)")
    rep = report["repeatability"]
    for kind in TIMES:
        tol = REPEAT_TOLERANCE[kind]
        name = f"repeatability {TIME_LABEL[kind]} within {tol:.0%} (>= {REPEAT_SHARE:.0%} of points)"
        if rep is None:
            line = (name, "no data (both runs needed)", "MISS")
        else:
            t = rep["times"][kind]
            if t["eligible"]:
                res = f"{t['within']}/{t['eligible']} ({t['share']:.1%})"
            else:
                res = "no eligible points"
            line = (name, res, t["verdict"])
            w(f"{TIME_LABEL[kind]:9s} within {tol:.0%}: {res:24s} {t['verdict']}"
              + (f"   [{t['not_converged_samples']} of the stats did not converge to +-1%]"
                 if t["not_converged_samples"] else ""))
            if t.get("by_mean", {}).get("eligible"):
                w(f"    by the mean instead of the median: {t['by_mean']['within']}/"
                  f"{t['by_mean']['eligible']} within {tol:.0%} (informational)")
            misses = t["eligible"] - t["within"]
            if misses:
                w(f"    {t.get('misses_with_host_speed', 0)} of the {misses} outside moved with the "
                  f"host's own speed (a host probe, core, memory or OS, beyond +-{HOST_MOVED:.0%}, "
                  "same direction); "
                  f"{t.get('misses_with_steal', 0)} had time stolen by the hypervisor from the "
                  "measuring core")
            held = t.get("intervals") or {}
            if held.get("judged"):
                lag1 = t.get("lag1_autocorrelation")
                w(f"    the runs' own 95% intervals hold the change (+-{INTERVAL_FLOOR:.0%}) for "
                  f"{held['hold']}/{held['judged']} points"
                  + (f"; lag-1 autocorrelation of the log ratios in sweep order {lag1:.2f} "
                     "(near 0: each point on its own; high: neighbours move together)"
                     if lag1 is not None else ""))
            for run_key, drift in (report.get("window_drift") or {}).items():
                d = (drift or {}).get("stream" if kind == "stream" else "call")
                if d and kind in ("call", "stream"):
                    w(f"    {run_key}: {d['points']} points timed in windows; their slowest over "
                      f"fastest window median x{d['median']:.3f} median, x{d['p90']:.3f} p90, "
                      f"x{d['max']:.3f} largest (the host's drift inside one run)")
            for r in t["worst"][:3]:  # the worst three, within the tolerance or not
                host = "".join(f"  {name} probe x{v:.3f}"
                               for name, v in (r.get("probe_ratios") or {}).items())
                stolen = (f"  steal {'/'.join(f'{v * 1e3:.0f}' for v in r['steal_s'])} ms"
                          if r.get("steal_s") else "")
                w(f"    {short(r['point'], 60):60s} {r['run1_s'] * 1e6:9.1f} -> {r['run2_s'] * 1e6:9.1f} us"
                  f"  x{r['ratio']:.3f}{'' if r['within'] else '  outside'}{host}{stolen}")
        summary.append(line)
    if rep is None:
        w("not judged: " + "; ".join(report["problems"]))
    elif rep["not_in_both"] or rep["not_ok"]:
        w(f"({rep['not_ok']} points of run 1 not ok, {rep['not_in_both']} not in run 2)")

    # Against PyTorch
    w("")
    w("== Against PyTorch (timeroof: geometric mean of the two runs; PyTorch: cudnn.benchmark=False)")
    tor = report["torch"]
    s_name = f"T_stream <= {STREAM_TARGET:.2f} x PyTorch back-to-back, every point"
    g_name = f"T_graph within {GRAPH_TOLERANCE:.0%} of PyTorch graph replay, same kernels"
    if tor is None:
        why = "no PyTorch reference or no timeroof points"
        w("not judged: " + why)
        summary += [(s_name, why, "MISS"), (g_name, why, "MISS"), ("T_call / PyTorch call", why, "info")]
    else:
        st, gr, ca = tor["stream"], tor["graph"], tor["call"]
        res = f"{st['passed']}/{st['judged']} points"
        if st["worst"]:
            res += f", worst x{st['worst']['ratio']['stream']:.3f}"
        w(f"{s_name}: {res}  {st['verdict']}"
          + (f"  ({st['kernels_differ_among_misses']} of the misses ran other kernels)"
             if st["kernels_differ_among_misses"] else ""))
        if st["worst"] and st["worst"]["ratio"]["stream"] > STREAM_TARGET:
            w(f"    worst: {st['worst']['point']}")
        summary.append((s_name, res, st["verdict"]))
        res = f"{gr['passed']}/{gr['judged']} points"
        if gr["worst"]:
            res += f", worst x{gr['worst']['ratio']['graph']:.3f}"
        extra = f"; {gr['kernels_differ']} with other kernels (not judged)"
        if gr["no_graph_time"]:
            extra += f"; {gr['no_graph_time']} without a graph time"
        if gr["kernels_unknown"]:
            extra += f"; {gr['kernels_unknown']} without kernel names on one side"
        w(f"{g_name}: {res}  {gr['verdict']}{extra}")
        summary.append((g_name, res + extra, gr["verdict"]))
        if ca["count"]:
            res = f"median x{ca['median']:.3f}, x{ca['min']:.3f} .. x{ca['max']:.3f} over {ca['count']} points"
        else:
            res = "no points"
        w(f"T_call / PyTorch synchronized call (informational): {res}")
        summary.append(("T_call / PyTorch call (informational)", res, "info"))
        if tor["torch_cases_not_ok"]:
            w(f"PyTorch cases not measured: {tor['torch_cases_not_ok']}")
            for c in tor["torch_cases_skipped"][:6]:
                w(f"    {c['op']} {c['precision']} batch={c['batch']}: {c['status']}: {c['reason']}")
        if tor["torch_cases_unmatched"]:
            w(f"PyTorch cases without a timeroof point: {len(tor['torch_cases_unmatched'])}")

        differ = [r for r in tor["rows"] if r["kernels"]["same"] is False]
        if differ:
            w("")
            w("== Kernels differ (T_graph not judged there; normalised names, argument lists dropped)")
            seen = set()
            shown = 0
            for r in differ:
                if shown >= 12:
                    w(f"  ... and {len(differ) - 12} more rows with other kernels (--json has them all)")
                    break
                shown += 1
                k = r["kernels"]
                sig = (r["op"], r["precision"], r["match"], tuple(k["only_timeroof"]), tuple(k["only_torch"]))
                tag = " [relaxed: " + ", ".join(f"{a}: {b[0]} vs {b[1]}" for a, b in r.get("differs", {}).items()) + "]" \
                    if r["match"] == "relaxed" else ""
                if sig in seen:
                    w(f"  {r['point']}{tag}: as above ({k['timeroof_launches']} vs {k['torch_launches']} launches)")
                    continue
                seen.add(sig)
                w(f"  {r['point']}{tag}: timeroof {k['timeroof_launches']} launches, PyTorch {k['torch_launches']}")
                for n in k["only_timeroof"][:4]:
                    w(f"      timeroof only: {short(n, 110)}")
                for n in k["only_torch"][:4]:
                    w(f"      PyTorch only:  {short(n, 110)}")
        missing = [r for r in tor["rows"] if r["ratio"]["graph"] is None
                   and (r["timeroof_graph_unavailable"] or r["torch_graph_unavailable"])]
        for r in missing[:6]:
            w(f"  no T_graph ratio for {r['point']}: "
              f"{r['timeroof_graph_unavailable'] or ''}{' / ' if r['timeroof_graph_unavailable'] and r['torch_graph_unavailable'] else ''}"
              f"{('PyTorch: ' + r['torch_graph_unavailable']) if r['torch_graph_unavailable'] else ''}")

    # PyTorch benchmark=True
    bench = report["torch_benchmark"]
    if bench:
        w("")
        w("== PyTorch cudnn.benchmark=True / its heuristic pass (informational)")
        for r in bench:
            k = {True: "same kernels", False: "other kernels", None: "kernels unknown"}[r["kernels"]["same"]]
            w(f"  {r['op']} {r['precision']} batch={r['batch']}: call x{x(r['ratio']['call']).strip()}, "
              f"stream x{x(r['ratio']['stream']).strip()}, graph x{x(r['ratio']['graph']).strip()} ({k})")

    # Bare loop
    w("")
    w("== Against a bare loop (runner_vs_bare)")
    bare = report["bare"]
    b_name = f"runner within {BARE_TOLERANCE:.0%} of a bare loop (same operator)"
    if bare is None:
        w("not run (no --bare log)")
        summary.append((b_name, "not run", "MISS"))
    else:
        same = bare.get("same", {"judged": 0, "within": 0, "largest": None})
        if same["judged"]:
            res = f"{same['within']}/{same['judged']} rows, largest {same['largest']:.2%}"
            if same.get("within_own_noise"):
                res += f"; {same['within_own_noise']} outside are within the bare loop's own noise"
        else:
            res = bare.get("reason", "no rows")
        w(f"{b_name}: {res}  {bare['verdict']}")
        by_time = bare.get("by_time", {})
        for time_name, kinds in sorted(by_time.items(), key=lambda kv: (["T_call", "T_stream", "T_graph"]
                                                                       + [kv[0]]).index(kv[0])):
            parts = [f"{kind} operator{'s' if kind == 'separate' else ''} {v['within']}/{v['judged']} within 2% "
                     f"(largest {v['largest']:.2%})" for kind, v in kinds.items()]
            w(f"    {time_name}: " + "; ".join(parts))
        summary.append((b_name, res, bare["verdict"]))

    # Per-point table
    if tor is not None and tor["rows"]:
        w("")
        w("== Points (us per call; x = timeroof / PyTorch; R = calls per graph, timeroof/PyTorch; "
          "~ = relaxed match, not judged)")
        width = min(64, max(len(r["point"]) for r in tor["rows"]) + 1)
        head = (f"{'point':44s} {'T_call':>8s} {'T_strm':>8s} {'T_graph':>8s} | {'pt call':>8s} {'pt strm':>8s} "
                f"{'pt graph':>8s} {'R':>7s} | {'strm x':>6s} {'graph x':>7s} {'call x':>6s}  kernels")
        w(head.replace(f"{'point':44s}", f"{'point':{width}s}"))
        for r in tor["rows"]:
            t, p, q = r["timeroof"], r["torch"], r["ratio"]
            rr = f"{r['timeroof_graph_copies'] or '?'}/{r['torch_graph_copies'] or '-'}"
            s_ok = "" if q["stream"] is None or r["match"] != "exact" else ("+" if q["stream"] <= STREAM_TARGET else "!")
            g_ok = ""
            if q["graph"] is not None and r["match"] == "exact" and r["kernels"]["same"] is True:
                g_ok = "+" if abs(q["graph"] - 1) <= GRAPH_TOLERANCE else "!"
            k = r["kernels"]
            kern = {True: "same", False: "differ", None: "unknown"}[k["same"]]
            if k["same"] and not k["counts_equal"]:
                kern += f" ({k['timeroof_launches']} vs {k['torch_launches']} launches)"
            if r.get("torch_memory_operations"):
                kern += f" (+{len(r['torch_memory_operations'])} memset/memcpy in PyTorch)"
            name = ("~" if r["match"] == "relaxed" else " ") + short(r["point"], width - 1)
            w(f"{name:{width}s} {us(t['call'])} {us(t['stream'])} {us(t['graph'])} | {us(p['call'])} "
              f"{us(p['stream'])} {us(p['graph'])} {rr:>7s} | {x(q['stream'])}{s_ok:1s} {x(q['graph'], 6)}{g_ok:1s} "
              f"{x(q['call'])}  {kern}")
        w("(+ within the target, ! outside it; no mark: not judged)")

    # Summary
    w("")
    w("== Summary (issue 13 benchmark targets)")
    width = max(len(s[0]) for s in summary)
    for name, res, verdict in summary:
        w(f"{name:{width}s}  {verdict:4s}  {res}")
    return "\n".join(out) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run1", help="timeroof export, run 1")
    parser.add_argument("run2", help="timeroof export, run 2 (the same points)")
    parser.add_argument("torch", help="torch_reference.py output")
    parser.add_argument("--bare", help="runner_vs_bare console output")
    parser.add_argument("--json", dest="json_out", help="write every ratio here")
    parser.add_argument("--min-us", type=float, default=20.0,
                        help="repeatability counts points whose median is at least this (default 20)")
    args = parser.parse_args(argv)
    report = build_report(args)
    sys.stdout.write(render(report))
    if args.json_out:
        try:
            with open(args.json_out, "w") as f:
                json.dump(report, f, indent=1, default=str)
        except OSError as e:
            print(f"--json {args.json_out}: {e}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
