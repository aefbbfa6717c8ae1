#!/usr/bin/env python3
"""PyTorch's times per call for the shapes timeroof sweeps, for the timing issue's
benchmark (scripts/device/timing-benchmark.sh, compared by timing_compare.py).
Runs ON THE GPU MACHINE (Python 3.12, PyTorch 2.11 + cu130); timeroof never
depends on it: it is a reference to measure against.

    torch_reference.py --out torch.json [--benchmark-pass] [--batches 1..1024]
                       [--series conv2d_fwd:fp16,...] [--timeroof-export run1.json]
                       [--time-limit-s 300] [--dry-run]

Series (each in a fresh worker process, so one crash, hang or poisoned CUDA
context costs one series, and cudnn.benchmark's plan cache never leaks from one
pass into the other): conv2d_fwd fp16 / fp32 and lstm_inference fp16 / fp32, batch
1, 2, 4, ..., 1024; with --benchmark-pass also the conv2d series with
torch.backends.cudnn.benchmark = True (recorded with "cudnn_benchmark": true and
params.algorithm = "exhaustive", timeroof's name for a searched algorithm).
cudnn.benchmark only changes convolutions, so LSTM has no second pass.

Shapes, timeroof params -> PyTorch (sweeps/conv2d_family.cpp, sweeps/lstm.hpp):
  conv2d (fwd): batch N, channels C = 64, height H = width W = 112, filters K = 64,
    filter R = S = 3, stride 2, pad "same" = dilation (R - 1) / 2 = 1, dilation 1,
    groups 1, layout nhwc, no bias, y = conv(x, w) overwritten (alpha 1, beta 0):
      x = randn(N, C, H, W).contiguous(memory_format=torch.channels_last)   (NHWC)
      w = randn(K, C/groups, R, S) / sqrt(C R S), channels_last              (KRSC)
      torch.nn.functional.conv2d(x, w, None, stride=(2, 2), padding=(1, 1),
                                 dilation=(1, 1), groups=1)   -> y N x K x 56 x 56, NHWC
    fp16: torch.float16 (Tensor Cores); fp32: torch.float32 with
    torch.backends.cudnn.allow_tf32 = False (FMA only; an fp32 output check against
    float64 at 5e-5 would catch TF32). PyTorch runs it through cuDNN's graph API
    (cudnn-frontend), hence params.cudnn_api = "graph".
  lstm (inference): batch B, seq_length T = 16, input_size I = 32, hidden_size H = 16,
    layers 1, unidirectional, both bias vectors, no dropout, no projection:
      lstm = torch.nn.LSTM(I, H, num_layers=1, bias=True, batch_first=False,
                           bidirectional=False).to(cuda, dtype).eval(); flatten_parameters()
      x = randn(T, B, I)  (sequence-major, as timeroof's T x B x I)
      h0, c0 = randn(1, B, H)  (given, random: timeroof fills hx and cx with random data)
      under torch.inference_mode(): y, (hy, cy) = lstm(x, (h0, c0))
    i.e. aten::_cudnn_rnn with train = False -> cudnnRNNForward(CUDNN_FWD_MODE_INFERENCE),
    x hx cx w -> y hy cy, as timeroof's inference pass. Weights: nn.LSTM's default
    U(-1/sqrt(H), 1/sqrt(H)), the same range timeroof uses. PyTorch picks the cuDNN
    RNN algorithm itself (aten/src/ATen/native/cudnn/RNN.cpp, get_algo): for a forward
    LSTM with hidden <= 192 on sm >= 6.0 that is CUDNN_RNN_ALGO_PERSIST_STATIC_SMALL_H,
    not timeroof's default "standard"; params.algorithm records that rule's answer,
    checked against the launches the profile shows (standard launches about 2T + 1
    kernels per call, a persistent algorithm a few).

Times per call (each a TimeStats like timeroof's: median, bootstrap 95% interval of
the median, spread (p90 - p10) / median, min, max, samples, calls_per_sample,
converged), mirroring timeroof's measure/ strategies so the ratios compare methods
of the same shape (stop rule: >= 20 samples, interval within +-1% of the median,
or 0.25 s / 2000 samples, then converged = false):
  call    CUDA events around one call on an idle GPU, synchronized after each
          (Python, the dispatcher and PyTorch's allocator included);
  issue   host perf_counter around the same calls' enqueue;
  stream  calls issued back to back: per chunk 2 untimed calls, then an event after
          every m calls (16 samples per chunk, one synchronization per chunk);
          m = ceil(200 us / T_call), at most 1000, or timeroof's own
          calls_per_sample for the point when --timeroof-export names it;
  graph   the call captured R times into one torch.cuda.CUDAGraph (thread-local
          capture mode where this PyTorch has it) after a side-stream warm-up, the
          graph replayed back to back like `stream`, per call = interval / (m R);
          R grows x8 from 1 (at most 256) while the host's time per replay exceeds
          half the GPU's time per replay (timeroof's rule), unless --graph-copies
          or timeroof's own copies (--timeroof-export) fix it. graph_copies is R.
Kernel names: after all timing of a series (so CUPTI is never attached while
timing), each case is rebuilt and one warmed-up call is profiled with
torch.profiler (CPU + CUDA activities): every kernel's name and duration, memcpy /
memset operations, and the aten ops (aten::cudnn_convolution / aten::_cudnn_rnn
prove the cuDNN path; a case without it is marked failed).

Defensive checks, each a one-line reason in the case when it fails: CUDA and cuDNN
available and enabled; allow_tf32 really off; inputs and weights really
channels_last (NHWC strides) and the output too; dtypes; output shapes; outputs
finite and equal to a float64 CPU reference on the first sequence / image
(fp16 1e-2, fp32 5e-5 of the largest magnitude); LSTM weights in one flat buffer
(no "not part of single contiguous chunk" warning); the cuDNN path; the LSTM
algorithm against the profile; CUDA_LAUNCH_BLOCKING and caching-allocator
switches that would falsify back-to-back times (environment warnings).

Exit code: 0 every case measured; 1 some case or series failed (the JSON says
which and why); 2 no usable PyTorch / CUDA / cuDNN at all.
"""
import argparse
import contextlib
import copy
import ctypes
import gc
import inspect
import json
import math
import os
import platform
import random
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
FORMAT = "timeroof-torch-reference"
SCHEMA_VERSION = 1

# timeroof's baselines (sweeps/conv2d_family.cpp, sweeps/lstm.hpp LstmSpec).
CONV_BASELINE = {"channels": 64, "height": 112, "width": 112, "filters": 64, "filter": 3,
                 "stride": 2, "pad": "same", "dilation": 1, "groups": 1, "layout": "nhwc",
                 "algorithm": "heuristic", "math": "auto", "direction": "fwd"}
LSTM_BASELINE = {"seq_length": 16, "input_size": 32, "hidden_size": 16, "layers": 1,
                 "bidirectional": 0, "pass": "inference"}
DEFAULT_BATCHES = [2 ** i for i in range(11)]  # 1 .. 1024, timeroof's default batch sweep

SERIES = ("conv2d_fwd:fp16", "conv2d_fwd:fp32", "lstm_inference:fp16", "lstm_inference:fp32")
BENCHMARK_SERIES = ("conv2d_fwd:fp16:benchmark", "conv2d_fwd:fp32:benchmark")

# timeroof's measure/ defaults (core/statistics.hpp StopRule, sequence_timing.hpp,
# back_to_back.hpp, graph_replay.hpp, warmup.hpp).
SAMPLE_SECONDS = 200e-6
MAX_LAUNCHES_PER_SAMPLE = 1000
SAMPLES_PER_CHUNK = 16
LEAD_LAUNCHES = 2
MAX_COPIES = 256
HOST_SHARE = 0.5
WARMUP_CALLS = 3
WARMUP_SECONDS = 0.02
CHECK_TOLERANCE = {"fp16": 1e-2, "fp32": 5e-5}


def log(message):
    print(message, file=sys.stderr, flush=True)


def one_line(error):
    text = f"{type(error).__name__}: {error}" if isinstance(error, BaseException) else str(error)
    lines = [l.strip() for l in text.strip().splitlines() if l.strip()]
    return (lines[0] if lines else text)[:400]


def atomic_write(path, document):
    folder = os.path.dirname(os.path.abspath(path)) or "."
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".torch-ref-", suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(document, f, indent=1, default=str)
    os.replace(tmp, path)


def parse_batches(text):
    """1,2,4 or 1..1024 (powers of two) or a mix."""
    values = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        m = re.fullmatch(r"(\d+)\.\.(\d+)(?::x(\d+))?", item)
        if m:
            start, end, factor = int(m.group(1)), int(m.group(2)), int(m.group(3) or 2)
            if start < 1 or factor < 2 or end < start:
                raise argparse.ArgumentTypeError(f"bad batch range {item!r}")
            b = start
            while b <= end:
                values.append(b)
                b *= factor
        elif item.isdigit() and int(item) >= 1:
            values.append(int(item))
        else:
            raise argparse.ArgumentTypeError(f"bad batch value {item!r}; use 1,2,4 or 1..1024")
    return list(dict.fromkeys(values))


def series_spec(name):
    parts = name.split(":")
    if len(parts) not in (2, 3) or parts[0] not in ("conv2d_fwd", "lstm_inference") \
            or parts[1] not in ("fp16", "fp32") or (len(parts) == 3 and parts[2] != "benchmark"):
        raise argparse.ArgumentTypeError(
            f"unknown series {name!r}; allowed: {', '.join(SERIES + BENCHMARK_SERIES)}")
    if parts[0] == "lstm_inference" and len(parts) == 3:
        raise argparse.ArgumentTypeError("cudnn.benchmark does not change LSTM: no lstm benchmark series")
    return {"name": name, "op": parts[0], "precision": parts[1], "benchmark": len(parts) == 3}


def case_params(series, batch):
    """The case's params in timeroof's names (what timing_compare.py matches on)."""
    if series["op"] == "conv2d_fwd":
        params = dict(CONV_BASELINE, batch=batch, precision=series["precision"], cudnn_api="graph")
        if series["benchmark"]:
            params["algorithm"] = "exhaustive"
        if os.environ.get("TORCH_CUDNN_V8_API_DISABLED"):
            params["cudnn_api"] = "legacy"
        return params
    return dict(LSTM_BASELINE, batch=batch, precision=series["precision"],
                math="fma_only" if series["precision"] == "fp32" else "tensor")


def conv_geometry(params):
    r = params["filter"]
    pad = params["dilation"] * (r - 1) // 2 if params["pad"] == "same" else int(params["pad"])
    p = (params["height"] + 2 * pad - params["dilation"] * (r - 1) - 1) // params["stride"] + 1
    q = (params["width"] + 2 * pad - params["dilation"] * (r - 1) - 1) // params["stride"] + 1
    return pad, p, q


def torch_call_text(series, params):
    if series["op"] == "conv2d_fwd":
        pad, p, q = conv_geometry(params)
        s, d = params["stride"], params["dilation"]
        return (f"torch.nn.functional.conv2d(x[{params['batch']},{params['channels']},{params['height']},"
                f"{params['width']} channels_last], w[{params['filters']},{params['channels'] // params['groups']},"
                f"{params['filter']},{params['filter']} channels_last], None, stride=({s}, {s}), "
                f"padding=({pad}, {pad}), dilation=({d}, {d}), groups={params['groups']})"
                f" -> y[{params['batch']},{params['filters']},{p},{q}] channels_last")
    return (f"torch.nn.LSTM({params['input_size']}, {params['hidden_size']}, num_layers={params['layers']}, "
            f"bias=True, batch_first=False, bidirectional={bool(params['bidirectional'])}).eval()"
            f"(x[{params['seq_length']},{params['batch']},{params['input_size']}], "
            f"(h0[1,{params['batch']},{params['hidden_size']}], c0[same])) under torch.inference_mode()")


# --------------------------------------------------------------------------
# Statistics (core/statistics.cpp, mirrored)


def quantile_of_sorted(values, q):
    if not values:
        return 0.0
    position = min(max(q, 0.0), 1.0) * (len(values) - 1)
    below = int(math.floor(position))
    above = min(below + 1, len(values) - 1)
    return values[below] + (position - below) * (values[above] - values[below])


def bootstrap_interval(samples, resamples=1000, level=0.95, seed=0x7133, torch=None):
    """Percentile bootstrap of the median: (median, low, high)."""
    median = statistics.median(samples) if samples else 0.0
    if len(samples) < 2:
        return median, median, median
    if torch is not None:
        gen = torch.Generator().manual_seed(seed)
        data = torch.tensor(samples, dtype=torch.float64)
        idx = torch.randint(0, len(samples), (resamples, len(samples)), generator=gen)
        medians = torch.quantile(data[idx], 0.5, dim=1)
        low = float(torch.quantile(medians, (1 - level) / 2))
        high = float(torch.quantile(medians, (1 + level) / 2))
        return median, low, high
    rng = random.Random(seed)
    n = len(samples)
    medians = sorted(statistics.median(rng.choices(samples, k=n)) for _ in range(resamples))
    return median, quantile_of_sorted(medians, (1 - level) / 2), quantile_of_sorted(medians, (1 + level) / 2)


class StopRule:
    def __init__(self, min_samples=20, max_samples=2000, target_relative_ci=0.01, budget_s=0.25):
        self.min_samples, self.max_samples = min_samples, max_samples
        self.target_relative_ci, self.budget_s = target_relative_ci, budget_s


def interval_converged(samples, rule, torch=None):
    if len(samples) < max(rule.min_samples, 2):
        return False
    median, low, high = bootstrap_interval(samples, 250, torch=torch)
    if median <= 0:
        return True
    return (high - low) / (2 * median) <= rule.target_relative_ci


def sample_until_converged(rule, samples, round_fn, first_round=10, torch=None):
    start = time.perf_counter()
    while True:
        have = len(samples)
        wanted = max(first_round, have // 4, rule.min_samples - have, 1)
        round_fn(min(wanted, max(rule.max_samples - have, 1)), samples)
        if interval_converged(samples, rule, torch):
            return True
        if len(samples) >= rule.max_samples or time.perf_counter() - start >= rule.budget_s:
            return False


def time_stats(samples, calls_per_sample, converged, torch=None):
    stats = {"median_s": 0.0, "ci_low_s": None, "ci_high_s": None, "spread": 0.0, "min_s": 0.0,
             "max_s": 0.0, "samples": len(samples), "calls_per_sample": int(calls_per_sample),
             "converged": bool(converged)}
    if not samples:
        return stats
    ordered = sorted(samples)
    median, low, high = bootstrap_interval(samples, torch=torch)
    stats.update(median_s=median, ci_low_s=low, ci_high_s=high, min_s=ordered[0], max_s=ordered[-1])
    if median > 0:
        stats["spread"] = (quantile_of_sorted(ordered, 0.9) - quantile_of_sorted(ordered, 0.1)) / median
    return stats


def launches_for(sample_seconds, launch_estimate_s, max_launches=MAX_LAUNCHES_PER_SAMPLE):
    if not launch_estimate_s or launch_estimate_s <= 0:
        return 1
    return int(min(max(math.ceil(sample_seconds / launch_estimate_s), 1), max_launches))


# --------------------------------------------------------------------------
# Timing strategies (measure/*.hpp, mirrored with torch.cuda events)


class Timer:
    def __init__(self, torch, rule):
        self.torch, self.rule = torch, rule
        self.events = [torch.cuda.Event(enable_timing=True) for _ in range(SAMPLES_PER_CHUNK + 1)]

    def warm_up(self, fn):
        torch = self.torch
        start, calls = time.perf_counter(), 0
        while calls < WARMUP_CALLS or time.perf_counter() - start < WARMUP_SECONDS:
            fn()
            torch.cuda.synchronize()
            calls += 1
        return calls

    def synchronized(self, fn):
        """T_call and the host issue time, from the same calls."""
        start, stop = self.events[0], self.events[1]
        issue = []

        def round_fn(n, samples):
            for _ in range(n):
                start.record()
                t0 = time.perf_counter()
                fn()
                issue.append(time.perf_counter() - t0)
                stop.record()
                stop.synchronize()
                samples.append(start.elapsed_time(stop) * 1e-3)

        samples = []
        converged = sample_until_converged(self.rule, samples, round_fn, torch=self.torch)
        return (time_stats(samples, 1, converged, self.torch),
                time_stats(issue, 1, interval_converged(issue, self.rule, self.torch), self.torch))

    def sequence(self, launch, launches_per_sample, calls_per_launch=1, while_running=None):
        """Back-to-back launches, an event every `launches_per_sample` of them;
        `while_running()` is called after each chunk is issued, before waiting for it
        (the GPU busy with the timed calls: where timeroof reads the SM clock)."""
        events = self.events
        per_sample = max(1, int(launches_per_sample))
        calls_per_sample = per_sample * calls_per_launch

        def chunk(wanted, samples):
            m = min(wanted, SAMPLES_PER_CHUNK)
            for _ in range(LEAD_LAUNCHES):
                launch()
            events[0].record()
            for j in range(1, m + 1):
                for _ in range(per_sample):
                    launch()
                events[j].record()
            if while_running:
                while_running()
            events[m].synchronize()
            for j in range(m):
                samples.append(events[j].elapsed_time(events[j + 1]) * 1e-3 / calls_per_sample)
            return m

        def round_fn(n, samples):
            while n > 0:
                n -= chunk(n, samples)

        samples = []
        converged = sample_until_converged(self.rule, samples, round_fn, SAMPLES_PER_CHUNK, self.torch)
        return time_stats(samples, calls_per_sample, converged, self.torch)

    def graph(self, fn, start_copies=1, strict=False, forced_launches=None):
        """T_graph: returns (stats or None, copies, unavailable reason, pilot history).
        Starts from `start_copies` calls per graph; unless `strict`, grows x8 (at most
        256) while the host's time per replay exceeds HOST_SHARE of the GPU's."""
        torch = self.torch
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                fn()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        kwargs = {}
        try:
            if "capture_error_mode" in inspect.signature(torch.cuda.graph.__init__).parameters:
                kwargs["capture_error_mode"] = "thread_local"
        except (TypeError, ValueError):
            pass

        def capture(copies):
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, **kwargs):
                for _ in range(copies):
                    fn()
            return g

        def pilot(g):
            for _ in range(2):
                g.replay()
            torch.cuda.synchronize()
            start, stop = self.events[0], self.events[1]
            start.record()
            t0 = time.perf_counter()
            for _ in range(8):
                g.replay()
            host = (time.perf_counter() - t0) / 8
            stop.record()
            stop.synchronize()
            return host, start.elapsed_time(stop) * 1e-3 / 8

        copies = max(1, int(start_copies or 1))
        history = []
        try:
            g = capture(copies)
        except Exception as e:  # noqa: BLE001 - any capture failure is a result
            with contextlib.suppress(Exception):
                torch.cuda.synchronize()
            return None, 0, "the call cannot be captured into a CUDA graph: " + one_line(e), history
        host, gpu = pilot(g)
        history.append({"copies": copies, "host_s": host, "gpu_s": gpu})
        if not strict:
            while host > HOST_SHARE * gpu and copies < MAX_COPIES:
                larger = min(MAX_COPIES, copies * 8)
                try:
                    g2 = capture(larger)
                except Exception as e:  # noqa: BLE001 - keep the smaller graph
                    history.append({"copies": larger, "failed": one_line(e)})
                    with contextlib.suppress(Exception):
                        torch.cuda.synchronize()
                    break
                g.reset()
                g, copies = g2, larger
                host, gpu = pilot(g)
                history.append({"copies": copies, "host_s": host, "gpu_s": gpu})
        start = max(1, int(start_copies or 1))
        # A hinted launches-per-sample was for the hinted graph size only.
        launches = forced_launches if forced_launches and copies == start else launches_for(SAMPLE_SECONDS, gpu)
        stats = self.sequence(g.replay, launches, copies)
        g.reset()
        del g
        return stats, copies, "", history


# --------------------------------------------------------------------------
# Cases


class CaseError(Exception):
    """A case cannot be measured as asked; the message is the one-line reason."""


def require(condition, reason):
    if not condition:
        raise CaseError(reason)


def relative_error(torch, got, expected):
    got, expected = got.double().cpu(), expected.double().cpu()
    scale = expected.abs().max().item()
    return (got - expected).abs().max().item() / (scale if scale > 0 else 1.0)


def nhwc_strides(n, c, h, w):
    return (h * w * c, 1, w * c, c)


def pytorch_lstm_algorithm(torch, params, props):
    """PyTorch's get_algo(forward=True) for an unpacked input
    (aten/src/ATen/native/cudnn/RNN.cpp): persist_static_small_h for LSTM hidden
    <= 192 on sm >= 6.0 (non-double); persist_static for fp16 under its persistence
    heuristics; standard otherwise."""
    hidden, batch = params["hidden_size"], params["batch"]
    if props.major >= 6 and hidden <= 192:
        return "persist_static_small_h"
    if params["precision"] == "fp16":
        common = (params["layers"] == 1 and hidden <= 1024 and not params["bidirectional"]
                  and hidden % 128 == 0 and params["input_size"] % 128 == 0)
        if props.major == 7:
            device = props.minor != 5 and ((batch % 16 == 0 and batch not in (80, 112)) or batch == 8) and (
                (params["seq_length"] >= 40 and batch <= 128) or (params["seq_length"] >= 20 and batch <= 96)
                or (params["seq_length"] >= 10 and batch <= 32))
        elif props.major >= 8 and props.multi_processor_count >= 98:
            device = props.minor != 6 and batch % 8 == 0 and batch <= 128
        else:
            device = False
        if common and device:
            return "persist_static"
    return "standard"


def build_case(torch, series, params, seed, props, device):
    """(fn, keep-alive dict, facts): one call of the operator, checked."""
    F = torch.nn.functional
    dtype = torch.float16 if series["precision"] == "fp16" else torch.float32
    gen = torch.Generator(device=device).manual_seed(seed)
    facts = {"checks": {}, "warnings": []}
    if series["op"] == "conv2d_fwd":
        n, c, h, w_ = params["batch"], params["channels"], params["height"], params["width"]
        k, r, groups = params["filters"], params["filter"], params["groups"]
        pad, p, q = conv_geometry(params)
        if CONV_INPUTS == "uniform":
            x = torch.rand(n, c, h, w_, device=device, dtype=dtype, generator=gen) * 2 - 1
            wt = torch.rand(k, c // groups, r, r, device=device, dtype=dtype, generator=gen) * 2 - 1
        else:
            x = torch.randn(n, c, h, w_, device=device, dtype=dtype, generator=gen)
            wt = torch.randn(k, c // groups, r, r, device=device, dtype=dtype, generator=gen)
            wt = wt / math.sqrt(c // groups * r * r)
        x = x.contiguous(memory_format=torch.channels_last)
        wt = wt.contiguous(memory_format=torch.channels_last)
        require(x.is_contiguous(memory_format=torch.channels_last) and x.stride() == nhwc_strides(n, c, h, w_),
                f"input is not NHWC: strides {x.stride()}, want {nhwc_strides(n, c, h, w_)}")
        require(wt.is_contiguous(memory_format=torch.channels_last)
                and wt.stride() == nhwc_strides(k, c // groups, r, r),
                f"filter is not KRSC: strides {wt.stride()}")
        stride, dil = (params["stride"],) * 2, (params["dilation"],) * 2

        def fn():
            return F.conv2d(x, wt, None, stride, (pad, pad), dil, groups)

        y = fn()
        torch.cuda.synchronize()
        require(tuple(y.shape) == (n, k, p, q), f"output shape {tuple(y.shape)}, want {(n, k, p, q)}")
        require(y.dtype == dtype, f"output dtype {y.dtype}, want {dtype}")
        require(y.is_contiguous(memory_format=torch.channels_last), f"output is not NHWC: strides {y.stride()}")
        require(bool(torch.isfinite(y).all()), "output has non-finite values")
        ref = F.conv2d(x[:1].double().cpu(), wt.double().cpu(), None, stride, (pad, pad), dil, groups)
        err = relative_error(torch, y[:1], ref)
        tol = CHECK_TOLERANCE[series["precision"]]
        facts["checks"].update(layout="x, w, y NHWC (channels_last strides)", dtype=str(dtype),
                               output_shape=list(y.shape), relative_error=err, tolerance=tol,
                               reference="float64 CPU conv2d of image 0")
        require(err <= tol, f"output differs from the float64 reference: relative error {err:.3g} > {tol:g}"
                + (" (TF32 would do this: is allow_tf32 really off?)" if series["precision"] == "fp32" else ""))
        del y
        return fn, {"x": x, "w": wt}, facts

    # lstm_inference
    b, t, i, hsz = params["batch"], params["seq_length"], params["input_size"], params["hidden_size"]
    layers, bidir = params["layers"], bool(params["bidirectional"])
    dirs = 2 if bidir else 1
    torch.manual_seed(seed)
    lstm = torch.nn.LSTM(i, hsz, num_layers=layers, bias=True, batch_first=False, dropout=0.0,
                         bidirectional=bidir)
    reference = copy.deepcopy(lstm).double()
    lstm = lstm.to(device=device, dtype=dtype).eval()
    with torch.no_grad():  # the CPU reference takes the same (rounded) weights
        for ref_p, p in zip(reference.parameters(), lstm.parameters()):
            ref_p.copy_(p.detach().double().cpu())
    lstm.flatten_parameters()
    require(not lstm.training, "the LSTM module is in training mode")
    x = torch.randn(t, b, i, device=device, dtype=dtype, generator=gen)
    h0 = torch.randn(layers * dirs, b, hsz, device=device, dtype=dtype, generator=gen)
    c0 = torch.randn(layers * dirs, b, hsz, device=device, dtype=dtype, generator=gen)
    require(torch.backends.cudnn.is_acceptable(x), "cudnn.is_acceptable(x) is False: no cuDNN path")

    def fn():
        return lstm(x, (h0, c0))

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y, (hy, cy) = fn()
        torch.cuda.synchronize()
    for wmsg in caught:
        facts["warnings"].append(one_line(str(wmsg.message)))
    require(not any("contiguous chunk" in m for m in facts["warnings"]),
            "LSTM weights are not in one flat buffer (PyTorch compacts them every call)")
    require(tuple(y.shape) == (t, b, dirs * hsz), f"y shape {tuple(y.shape)}, want {(t, b, dirs * hsz)}")
    require(tuple(hy.shape) == (layers * dirs, b, hsz) and tuple(cy.shape) == (layers * dirs, b, hsz),
            f"hy/cy shapes {tuple(hy.shape)}/{tuple(cy.shape)}")
    require(y.dtype == dtype and hy.dtype == dtype, f"output dtype {y.dtype}, want {dtype}")
    require(all(bool(torch.isfinite(v).all()) for v in (y, hy, cy)), "outputs have non-finite values")
    with torch.no_grad():
        ry, (rhy, rcy) = reference(x[:, :1].double().cpu(), (h0[:, :1].double().cpu(), c0[:, :1].double().cpu()))
    err = max(relative_error(torch, y[:, :1], ry), relative_error(torch, hy[:, :1], rhy),
              relative_error(torch, cy[:, :1], rcy))
    tol = CHECK_TOLERANCE[series["precision"]] * (2 if series["precision"] == "fp16" else 1)
    facts["checks"].update(dtype=str(dtype), output_shape=list(y.shape), relative_error=err, tolerance=tol,
                           reference="float64 CPU nn.LSTM on sequence 0 (y, hy, cy)",
                           weights_flat=True, training=False)
    require(err <= tol, f"outputs differ from the float64 reference: relative error {err:.3g} > {tol:g}"
            + (" (TF32 would do this: is allow_tf32 really off?)" if series["precision"] == "fp32" else ""))
    inferred = pytorch_lstm_algorithm(torch, params, props)
    facts["algorithm_rule"] = inferred
    params["algorithm"] = inferred
    del y, hy, cy
    return fn, {"lstm": lstm, "x": x, "h0": h0, "c0": c0}, facts


def ops_through_dispatch(torch, fn):
    """aten ops a call dispatches (TorchDispatchMode: no CUPTI), or None where unavailable."""
    try:
        from torch.utils._python_dispatch import TorchDispatchMode
    except ImportError:
        return None
    seen = []

    class Spy(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(getattr(func, "__name__", func)))
            return func(*args, **(kwargs or {}))

    try:
        with Spy():
            fn()
        torch.cuda.synchronize()
    except Exception:  # noqa: BLE001 - a pre-check only
        return None
    return seen


def profiled(torch, fn, calls=1):
    """torch.profiler (CPU + CUDA activities) over `calls` calls in a row."""
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Profiler clears events at the end of each cycle"
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(calls):
                fn()
            torch.cuda.synchronize()
    return prof


def profile_launches(torch, fn, calls=1):
    """The device kernels of `calls` calls in a row, [(name, grid, block, seconds)] in
    start order, from the profile's Chrome trace (the one place Kineto gives the grid
    and block of each launch)."""
    prof = profiled(torch, fn, calls)
    fd, path = tempfile.mkstemp(prefix="torch-launches-", suffix=".json")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        with open(path) as f:
            trace = json.load(f)
    finally:
        os.unlink(path)
    events = sorted((e for e in trace.get("traceEvents", []) if e.get("cat") == "kernel"),
                    key=lambda e: e.get("ts", 0))
    return [(e.get("name", ""), list(e.get("args", {}).get("grid", [])), list(e.get("args", {}).get("block", [])),
             e.get("dur", 0) * 1e-6) for e in events]


def profile_one_call(torch, fn):
    """(kernels [(name, seconds)] in start order, memory operations, CPU op names)."""
    prof = profiled(torch, fn)
    device, cpu = [], set()
    for e in prof.events():
        kind = str(getattr(e, "device_type", ""))
        if kind.endswith("CUDA"):
            tr = getattr(e, "time_range", None)
            start = getattr(tr, "start", 0) if tr else 0
            dur_us = tr.elapsed_us() if tr is not None else getattr(e, "device_time", 0)
            device.append((start, e.name, dur_us * 1e-6))
        else:
            cpu.add(e.name)
    if not device:  # other releases: the raw Kineto events
        with contextlib.suppress(Exception):
            for e in prof.profiler.kineto_results.events():
                if str(e.device_type()).endswith("CUDA"):
                    start = e.start_ns() if hasattr(e, "start_ns") else e.start_us() * 1e3
                    dur = e.duration_ns() * 1e-9 if hasattr(e, "duration_ns") else e.duration_us() * 1e-6
                    device.append((start, e.name(), dur))
    device.sort(key=lambda d: d[0])
    memory = [(n, d) for _, n, d in device if n.startswith(("Memcpy", "Memset", "memcpy", "memset"))]
    kernels = [(n, d) for _, n, d in device if not n.startswith(("Memcpy", "Memset", "memcpy", "memset"))]
    return kernels, memory, sorted(cpu)


# --------------------------------------------------------------------------
# Against timeroof's points, kernel by kernel (issue 18's *_torch_compare.py)
#
# Each script turns the points of `timeroof export` files into PyTorch calls on the
# same shapes. PointComparison measures each call in timeroof's order (the Timer
# above: warm-up, T_call's synchronized calls, then T_stream: calls back to back with
# an event every timeroof's calls_per_sample of the point, the +-1% stop rule), reads
# the SM clock through NVML while the stream's calls run (as timeroof does: a GEMM
# under the power limit runs at 1.3-1.98 GHz, so two times of one kernel compare only
# at one clock), then profiles a few calls for the device kernels PyTorch ran and
# their grids, and compares them with the kernels timeroof traced for the point
# (timing_compare's normalised names). The verdict counts only shapes where the
# kernels are the same and neither side is host-bound: elsewhere a ratio compares two
# implementations, or two hosts' per-call costs.

COMPARE_TOLERANCE = 0.05  # issue 18: T_stream within 5% of PyTorch's time
PROFILED_CALLS = 3  # calls profiled after the timing, for the kernel names
HOST_BOUND_SHARE = 0.8  # a side whose kernels are busy under this share of its time per call
SAME_CLOCK = 0.02  # SM clocks this near count as the same
NVML_CLOCK_SM = 1


class SmClock:
    """The SM clock of CUDA device 0's GPU through NVML (libnvidia-ml.so.1 by ctypes:
    no Python package needed); hz() is None where NVML is missing."""

    def __init__(self, torch):
        self.lib = self.handle = None
        with contextlib.suppress(OSError, AttributeError):
            lib = ctypes.CDLL("libnvidia-ml.so.1")
            if lib.nvmlInit_v2() != 0:
                return
            handle = ctypes.c_void_p()
            props = torch.cuda.get_device_properties(torch.cuda.current_device())
            # NVML numbers GPUs its own way; the PCI address names the one CUDA uses.
            address = "%08x:%02x:%02x.0" % (getattr(props, "pci_domain_id", 0), getattr(props, "pci_bus_id", 0),
                                            getattr(props, "pci_device_id", 0))
            if lib.nvmlDeviceGetHandleByPciBusId_v2(address.encode(), ctypes.byref(handle)) != 0 and \
                    lib.nvmlDeviceGetHandleByIndex_v2(ctypes.c_uint(0), ctypes.byref(handle)) != 0:
                return
            self.lib, self.handle = lib, handle

    def hz(self):
        if self.handle is None:
            return None
        mhz = ctypes.c_uint()
        if self.lib.nvmlDeviceGetClockInfo(self.handle, NVML_CLOCK_SM, ctypes.byref(mhz)) != 0:
            return None
        return mhz.value * 1e6


def timing_compare_module():
    sys.path.insert(0, HERE)
    sys.dont_write_bytecode = True  # no __pycache__ beside the scripts
    import timing_compare
    return timing_compare


def export_points(paths, wanted_op):
    """The ok points with a T_stream of `timeroof export` files whose op
    `wanted_op(op)` accepts, in file order (each with "_gpu", its run's GPU)."""
    tc = timing_compare_module()
    return [p for path in paths for p in tc.load_export(path)
            if p.get("status") == "ok" and wanted_op(p.get("op", "")) and tc.median_s(p, "stream")]


def point_precision(point):
    return point.get("precision") or (point.get("params") or {}).get("precision", "")


def calls_per_call(launches, calls):
    """One call's launches out of `calls` profiled calls in a row: the first call's
    share when the launches repeat call after call, else every launch (a set
    comparison is unaffected)."""
    if calls > 1 and launches and len(launches) % calls == 0:
        per = len(launches) // calls
        chunks = [launches[i * per:(i + 1) * per] for i in range(calls)]
        if all(c == chunks[0] for c in chunks):
            return chunks[0]
    return launches


def short_kernel_list(names, width=90):
    """'name x2, other' in first-seen order, each normalised and cut to `width`."""
    tc = timing_compare_module()
    counts = {}
    for n in tc.kernel_names(names):
        counts[n] = counts.get(n, 0) + 1
    return ", ".join(tc.short(n, width) + (f" x{c}" if c > 1 else "") for n, c in counts.items()) or "-"


def launch_configs(launches):
    """Sorted (normalised name, grid, block) of each launch, for an equality test."""
    tc = timing_compare_module()
    names = tc.kernel_names([name for name, _, _ in launches])
    return sorted((n, tuple(grid), tuple(block)) for n, (_, grid, block) in zip(names, launches))


def median_or_none(values):
    values = [v for v in values if v]
    return statistics.median(values) if values else None


class PointComparison:
    """Rows of timeroof T_stream / PyTorch time with the kernels each side ran and
    the clocks they ran at, and the verdict over the rows that compare one kernel."""

    def __init__(self, torch, title, load_s=0.0):
        self.torch, self.title, self.rows, self.load_s = torch, title, [], load_s
        self.timer = Timer(torch, StopRule())
        self.clock = SmClock(torch)
        self.tc = timing_compare_module()
        self.gpus = set()
        print(f"== {title}: PyTorch {torch.__version__} (cuDNN {torch.backends.cudnn.version()}) on "
              f"{torch.cuda.get_device_name()}", flush=True)
        print(f"{'shape':60s} {'timeroof us':>11s} {'torch us':>9s} {'ratio':>6s} {'k us ours/torch':>16s} "
              f"{'MHz ours/torch':>14s}  same kernels", flush=True)

    def torch_time(self, fn, calls_per_sample):
        """(T_stream-like stats of fn with "sm_clock_hz", one call's launches
        [(name, grid, block)], its kernels' busy seconds per call, T_call-like stats)."""
        torch = self.torch
        clocks = []
        gc.collect()
        gc.disable()
        try:
            self.timer.warm_up(fn)
            started = time.perf_counter()
            while time.perf_counter() - started < self.load_s:  # the power state of a sustained load
                fn()
            call, _ = self.timer.synchronized(fn)
            per_sample = calls_per_sample or launches_for(SAMPLE_SECONDS, call["median_s"])
            stats = self.timer.sequence(fn, per_sample, while_running=lambda: clocks.append(self.clock.hz()))
        finally:
            gc.enable()
        stats["sm_clock_hz"] = median_or_none(clocks)
        launches = profile_launches(torch, fn, PROFILED_CALLS)
        busy = sum(seconds for *_, seconds in launches) / PROFILED_CALLS
        return stats, calls_per_call([(n, g, b) for n, g, b, _ in launches], PROFILED_CALLS), busy, call

    def compare(self, label, point, candidates):
        """Times each candidate (note, fn[, setting]) of PyTorch's call for `point` in
        turn, until one runs timeroof's kernels; prints each; the row judged is that one,
        else the first. `setting()`, a context manager, holds around a candidate's timing
        and profile (a library choice, not paid per call). A candidate that raises is
        printed with its one-line reason."""
        tc = self.tc
        ours = tc.median_s(point, "stream")
        our_launches = [(k.get("name", ""), k.get("grid", []), k.get("block", []))
                        for k in point.get("kernels", []) if isinstance(k, dict)]
        our_clocks = ((point.get("details") or {}).get("timing") or {}).get("sm_clock_hz") or {}
        calls = (tc.time_stats(point, "stream") or {}).get("calls_per_sample")
        self.gpus.add(point.get("_gpu", ""))
        measured = []
        for note, fn, *setting in candidates:
            try:
                with (setting[0]() if setting else contextlib.nullcontext()):
                    stats, launches, busy, call = self.torch_time(fn, calls)
            except Exception as e:  # noqa: BLE001 - a refused call is a result of the row
                print(f"{label:60s} PyTorch{(' (' + note + ')') if note else ''} failed: {one_line(e)}",
                      flush=True)
                with contextlib.suppress(Exception):
                    self.torch.cuda.synchronize()
                continue
            row = self.row(label, note, point, ours, our_launches, our_clocks.get("stream"),
                           stats, launches, busy, call)
            measured.append(row)
            self.print_row(row)
            if row["same"]:
                break
        if not measured:
            return None
        judged = next((r for r in measured if r["same"]), measured[0])
        self.rows.append(judged)
        self.torch.cuda.empty_cache()
        return judged

    def row(self, label, note, point, ours, our_launches, our_clock, stats, launches, busy, call):
        our_names, names = [n for n, _, _ in our_launches], [n for n, _, _ in launches]
        theirs = stats["median_s"]
        our_busy = (point.get("timing") or {}).get("kernel_time_s")
        row = {"label": label, "note": note, "ours_s": ours, "torch_s": theirs,
               "ratio": ours / theirs if theirs else None,
               "same": self.tc.compare_kernels(our_names, names)["same"],
               "same_launches": launch_configs(our_launches) == launch_configs(launches),
               "our_kernels": our_names, "torch_kernels": names,
               "our_launches": our_launches, "torch_launches": launches,
               "our_busy_s": our_busy, "torch_busy_s": busy,
               "our_clock_hz": our_clock, "torch_clock_hz": stats.get("sm_clock_hz"),
               "torch_stream": stats, "torch_call": call}
        row["host_bound"] = [side for side, busy_s, t in (("timeroof", our_busy, ours), ("PyTorch", busy, theirs))
                             if busy_s and t and busy_s < HOST_BOUND_SHARE * t]
        # Under the power limit a Tensor-Core GEMM's clock moves by 30% with the load
        # before it; NVML's readings are instants, so they sort rows, they scale nothing.
        row["same_clock"] = bool(our_clock and row["torch_clock_hz"]) and \
            abs(our_clock / row["torch_clock_hz"] - 1) <= SAME_CLOCK
        return row

    def skip(self, label, why):
        print(f"{label:60s} skipped: {why}", flush=True)

    def print_row(self, row):
        label = row["label"] + (f" [{row['note']}]" if row["note"] else "")
        us = lambda s: f"{s * 1e6:.1f}" if s else "-"  # noqa: E731
        mhz = lambda hz: f"{hz / 1e6:.0f}" if hz else "-"  # noqa: E731
        ratio = f"{row['ratio']:6.3f}" if row["ratio"] else f"{'-':>6s}"
        same = {True: "yes", False: "no", None: "unknown"}[row["same"]]
        if row["same"] and not row["same_launches"]:
            same += " (other grid or block)"
        notes = [f"{' and '.join(row['host_bound'])} host-bound"] if row["host_bound"] else []
        if row["our_clock_hz"] and row["torch_clock_hz"] and not row["same_clock"]:
            notes.append("other SM clocks")
        print(f"{label:60s} {row['ours_s'] * 1e6:11.1f} {row['torch_s'] * 1e6:9.1f} {ratio} "
              f"{us(row['our_busy_s']) + '/' + us(row['torch_busy_s']):>16s} "
              f"{mhz(row['our_clock_hz']) + '/' + mhz(row['torch_clock_hz']):>14s}  {same}"
              + (f" ({'; '.join(notes)})" if notes else ""), flush=True)
        if row["same"] is not True:
            print(f"    timeroof: {short_kernel_list(row['our_kernels'])}", flush=True)
            print(f"    PyTorch:  {short_kernel_list(row['torch_kernels'])}", flush=True)
        elif not row["same_launches"]:
            print(f"    timeroof grids: {sorted(set(tuple(g) for _, g, _ in row['our_launches']))}, "
                  f"PyTorch: {sorted(set(tuple(g) for _, g, _ in row['torch_launches']))}", flush=True)

    def summary(self):
        """The verdict lines; returns the rows (for a JSON dump)."""
        def within(rows, key="ratio"):
            return sum(1 for r in rows if r[key] and abs(r[key] - 1) <= COMPARE_TOLERANCE)

        same = [r for r in self.rows if r["same"]]
        judged = [r for r in same if not r["host_bound"]]
        ratios = [r["ratio"] for r in judged if r["ratio"]]
        clocked = [r for r in judged if r["same_clock"]]
        print(f"-- {self.title} on {', '.join(sorted(g for g in self.gpus if g)) or 'the GPU'}", flush=True)
        print(f"verdict: T_stream within {COMPARE_TOLERANCE:.0%} of PyTorch's time on {within(judged)} of "
              f"{len(judged)} shapes where the same kernels run and neither side is host-bound"
              + (f" (ratio median {statistics.median(ratios):.3f}, {min(ratios):.3f} .. {max(ratios):.3f})"
                 if ratios else ""), flush=True)
        print(f"  of them at the same SM clock (NVML during the stream, within {SAME_CLOCK:.0%}): within "
              f"{COMPARE_TOLERANCE:.0%} on {within(clocked)} of {len(clocked)}", flush=True)
        print(f"  the same kernels, a side host-bound (its kernels busy < {HOST_BOUND_SHARE:.0%} of its time: "
              f"the ratio compares per-call host costs; not judged): {len(same) - len(judged)}", flush=True)
        other = [r for r in self.rows if r["same"] is False]
        print(f"  other kernels (not judged): {len(other)} of {len(self.rows)} shapes; within "
              f"{COMPARE_TOLERANCE:.0%} anyway: {within(other)}", flush=True)
        return self.rows


def comparison_main(description, wanted_op, rows_for_points, argv=None):
    """The scripts' shared main: EXPORT.json ... [--json OUT]; rows_for_points(torch,
    comparison, points) fills the comparison. Exit 0 (a benchmark, not a test)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("exports", nargs="+", help="`timeroof export` JSON files")
    parser.add_argument("--json", help="also write the rows here")
    parser.add_argument("--load-s", type=float, default=0.0,
                        help="seconds of back-to-back calls before each shape's timing (default 0): "
                             "the power limit's clock after a sustained load, as a sweep's points see it")
    args = parser.parse_args(argv)
    import torch
    warnings.filterwarnings("ignore", category=UserWarning)
    points = export_points(args.exports, wanted_op)
    if not points:
        print(f"{description}: no ok point with a T_stream in {', '.join(args.exports)}")
        return 0
    comparison = PointComparison(torch, description, args.load_s)
    rows_for_points(torch, comparison, points)
    rows = comparison.summary()
    if args.json:
        atomic_write(args.json, {"title": description, "gpus": sorted(comparison.gpus), "rows": rows})
    return 0


# --------------------------------------------------------------------------
# Environment


def loaded_library(fragment):
    with contextlib.suppress(OSError):
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split()[-1] if line.strip() else ""
                if fragment in os.path.basename(path):
                    return path
    return ""


def driver_version():
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20).stdout.strip().splitlines()
        if out:
            return out[0].strip()
    with contextlib.suppress(OSError):
        with open("/proc/driver/nvidia/version") as f:
            m = re.search(r"Kernel Module\s+(\S+)", f.read())
            if m:
                return m.group(1)
    return ""


def setup_environment(torch, args, benchmark):
    """Flags set and read back; (environment dict, fatal reason or "")."""
    env = {"python": platform.python_version(), "host": socket.gethostname(),
           "torch": getattr(torch, "__version__", "?"), "torch_cuda": getattr(torch.version, "cuda", None),
           "warnings": []}
    if not torch.cuda.is_available():
        return env, "PyTorch sees no CUDA device (torch.cuda.is_available() is False)"
    if not torch.backends.cudnn.is_available():
        return env, "this PyTorch has no cuDNN (torch.backends.cudnn.is_available() is False)"
    if args.device >= torch.cuda.device_count():
        return env, f"--device {args.device}: only {torch.cuda.device_count()} CUDA devices"
    torch.cuda.set_device(args.device)
    try:
        torch.backends.cudnn.enabled = True
        torch.backends.cudnn.benchmark = benchmark
        torch.backends.cudnn.deterministic = False
        torch.backends.cudnn.allow_tf32 = False
        flags = {"enabled": torch.backends.cudnn.enabled, "benchmark": torch.backends.cudnn.benchmark,
                 "deterministic": torch.backends.cudnn.deterministic,
                 "allow_tf32": torch.backends.cudnn.allow_tf32}
    except Exception as e:  # noqa: BLE001
        return env, "cannot set the cuDNN flags (enabled, benchmark, allow_tf32): " + one_line(e)
    for name in ("conv", "rnn"):  # PyTorch >= 2.9's fp32_precision; read only, never mixed in
        with contextlib.suppress(Exception):
            flags[f"{name}.fp32_precision"] = getattr(getattr(torch.backends.cudnn, name), "fp32_precision")
    with contextlib.suppress(Exception):
        flags["benchmark_limit"] = torch.backends.cudnn.benchmark_limit
    env["cudnn_flags"] = flags
    if flags["allow_tf32"] is not False:
        return env, "torch.backends.cudnn.allow_tf32 reads back True after setting it False"
    if flags["benchmark"] != benchmark or flags["enabled"] is not True:
        return env, f"cuDNN flags did not take: {flags}"
    for name in ("conv", "rnn"):
        value = flags.get(f"{name}.fp32_precision")
        if value not in (None, "none", "ieee"):
            env["warnings"].append(f"torch.backends.cudnn.{name}.fp32_precision reads {value!r} with allow_tf32 "
                                   "False; the fp32 output checks (5e-5) would catch TF32")
    props = torch.cuda.get_device_properties(args.device)
    env.update(cudnn_version=torch.backends.cudnn.version(), cudnn_library=loaded_library("libcudnn.so"),
               gpu_name=torch.cuda.get_device_name(args.device), device=args.device,
               compute_capability=[props.major, props.minor], sm_count=props.multi_processor_count,
               memory_bytes=props.total_memory, driver=driver_version(),
               cuda_library=loaded_library("libcudart"),
               affinity=sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None)
    env["conv_cudnn_api"] = "legacy" if os.environ.get("TORCH_CUDNN_V8_API_DISABLED") else "graph"
    interesting = ("CUDA_LAUNCH_BLOCKING", "PYTORCH_NO_CUDA_MEMORY_CACHING", "PYTORCH_CUDA_ALLOC_CONF",
                   "NVIDIA_TF32_OVERRIDE", "TORCH_CUDNN_V8_API_DISABLED", "TORCH_CUDNN_V8_API_LRU_CACHE_LIMIT",
                   "CUDA_VISIBLE_DEVICES", "CUDNN_LOGINFO_DBG", "CUDNN_LOGLEVEL_DBG", "CUDA_MODULE_LOADING")
    env["env"] = {k: os.environ[k] for k in interesting if k in os.environ}
    if os.environ.get("CUDA_LAUNCH_BLOCKING", "0") not in ("", "0"):
        env["warnings"].append("CUDA_LAUNCH_BLOCKING is set: every launch waits, back-to-back and graph "
                               "times are not what a loop sees")
    if os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING", "0") not in ("", "0"):
        env["warnings"].append("PYTORCH_NO_CUDA_MEMORY_CACHING is set: every call cudaMallocs its outputs")
    if os.environ.get("NVIDIA_TF32_OVERRIDE") not in (None, "0"):
        env["warnings"].append(f"NVIDIA_TF32_OVERRIDE={os.environ['NVIDIA_TF32_OVERRIDE']}")
    if os.environ.get("CUDNN_LOGINFO_DBG") or os.environ.get("CUDNN_LOGLEVEL_DBG"):
        env["warnings"].append("cuDNN API logging is on: it slows every call")
    return env, ""


# --------------------------------------------------------------------------
# Worker: one series in this process


def timeroof_hints(path):
    """Points of a timeroof export, for calls_per_sample and graph copies per point."""
    if not path:
        return []
    try:
        tc = timing_compare_module()
        return tc.prepare_points(tc.load_export(path))
    except Exception as e:  # noqa: BLE001 - hints only
        log(f"--timeroof-export {path}: not used ({one_line(e)})")
        return []


def hints_for(points, case):
    """(stream calls per sample, graph copies, graph launches per sample, source) from
    the exactly matching timeroof point, or Nones."""
    if not points:
        return None, None, None, ""
    tc = timing_compare_module()
    params = tc.normalize_params(case["op"], case["precision"], case["params"])
    for p in points:
        if p.get("status") != "ok" or p.get("op") != case["op"] or p.get("precision") != case["precision"]:
            continue
        if not tc.params_match(params, p["_params"]):
            continue
        stream = tc.time_stats(p, "stream")
        graph = tc.time_stats(p, "graph")
        copies = tc.graph_copies_of(p)
        per_sample = stream.get("calls_per_sample") if stream else None
        launches = None
        if copies and graph and graph.get("calls_per_sample"):
            launches = max(1, round(graph["calls_per_sample"] / copies))
        return per_sample, copies, launches, "timeroof export point (seq %s)" % p.get("seq")
    return None, None, None, ""


def run_series(series, args, out, write):
    """Measures one series into out["cases"]; returns the exit code."""
    try:
        import torch
    except Exception as e:  # noqa: BLE001
        out["errors"].append(f"{series['name']}: cannot import torch: {one_line(e)}")
        write()
        return 2
    env, fatal = setup_environment(torch, args, series["benchmark"])
    out["environment"] = env
    if fatal:
        out["errors"].append(f"{series['name']}: {fatal}")
        write()
        log(f"torch_reference: {series['name']}: {fatal}")
        return 2
    for warning in env["warnings"]:
        log(f"torch_reference: warning: {warning}")
    if args.pin_core is not None:
        os.sched_setaffinity(0, {args.pin_core})
        env["pinned_core"] = args.pin_core
    device = torch.device("cuda", args.device)
    props = torch.cuda.get_device_properties(args.device)
    rule = StopRule(args.min_samples, args.max_samples, args.target_ci, args.budget_s)
    timer = Timer(torch, rule)
    hints = timeroof_hints(args.timeroof_export)
    broken = ""
    status = 0
    for batch in args.batches:
        params = case_params(series, batch)
        case = {"op": series["op"], "precision": series["precision"],
                "math_mode": "fma_only" if series["precision"] == "fp32" else "tensor",
                "cudnn_benchmark": series["benchmark"], "params": params,
                "torch_call": torch_call_text(series, params), "status": "ok", "reason": "",
                "timing": {"call": None, "stream": None, "graph": None, "issue": None,
                           "graph_unavailable": "", "graph_copies": None},
                "kernels": [], "kernel_names": [], "memory_operations": [], "cpu_ops": [],
                "checks": {}, "warnings": [], "seed": args.seed + batch}
        out["cases"].append(case)
        label = f"{series['name']} batch {batch}"
        if broken:
            case.update(status="skipped", reason=f"CUDA context unusable after an earlier failure: {broken}")
            write()
            continue
        gc.collect()
        torch.cuda.empty_cache()
        t0 = time.perf_counter()
        try:
            fn, keep, facts = build_case(torch, series, params, case["seed"], props, device)
            case["checks"].update(facts["checks"])
            case["warnings"] += facts["warnings"]
            if "algorithm_rule" in facts:
                case["algorithm"] = "CUDNN_RNN_ALGO_" + facts["algorithm_rule"].upper() + " (PyTorch's get_algo rule)"
            per_sample, copies, launches, source = hints_for(hints, case)
            strict = bool(args.graph_copies)
            if strict:
                copies, launches, source = args.graph_copies, None, "--graph-copies (fixed)"
            case["timing"]["hint_source"] = (source + (": its calls per sample and graph copies, the copies "
                                                       "grown while PyTorch's replay is host-bound"
                                                       if source and not strict else "")
                                             ) or "own rule (timeroof's, mirrored)"
            with torch.inference_mode():
                seen = ops_through_dispatch(torch, fn) if series["op"] == "lstm_inference" else None
                if seen is not None:
                    # A dispatch mode may see aten.lstm itself (decomposed below it) or its
                    # decomposition; only a native-path decomposition is conclusive here,
                    # the profile at the end is the authority.
                    case["checks"]["dispatched_ops"] = sorted(set(seen))
                    native = [o for o in seen if re.search(r"thnn|addmm|\.mm\.|matmul|_lstm_mps", o)]
                    require(any("_cudnn_rnn" in o for o in seen) or not native,
                            "the LSTM runs PyTorch's native cell, not cuDNN: " + ", ".join(sorted(set(seen))[:6]))
                gc.disable()
                try:
                    timer.warm_up(fn)
                    call, issue = timer.synchronized(fn)
                    case["timing"]["call"], case["timing"]["issue"] = call, issue
                    m = per_sample or launches_for(SAMPLE_SECONDS, call["median_s"])
                    case["timing"]["stream"] = timer.sequence(fn, m)
                    stats, r, why, history = timer.graph(fn, copies or 1, strict, launches)
                    case["timing"].update(graph=stats, graph_copies=r or None, graph_unavailable=why,
                                          graph_pilot=history)
                finally:
                    gc.enable()
            del fn, keep
        except CaseError as e:
            case.update(status="failed", reason=str(e))
            status = 1
        except Exception as e:  # noqa: BLE001 - one case's failure never ends the series
            case.update(status="failed", reason=one_line(e))
            case["traceback"] = traceback.format_exc(limit=4)
            status = 1
            try:
                torch.cuda.synchronize()
            except Exception as sync_error:  # noqa: BLE001
                broken = one_line(sync_error)
        timing = case["timing"]
        if case["status"] == "ok":
            g = timing["graph"]
            log(f"{label}: call {timing['call']['median_s'] * 1e6:.1f} us, stream "
                f"{timing['stream']['median_s'] * 1e6:.1f} us, graph "
                + (f"{g['median_s'] * 1e6:.1f} us (R {timing['graph_copies']})" if g else
                   f"unavailable: {timing['graph_unavailable']}")
                + f"  [{time.perf_counter() - t0:.1f} s]")
        else:
            log(f"{label}: {case['status']}: {case['reason']}")
        write()

    env["cublas_library"] = loaded_library("libcublas.so")  # loaded by now, if any call used it
    env["cublaslt_library"] = loaded_library("libcublasLt.so")
    # Kernel names: profiled last, so CUPTI was never attached while timing.
    for case in out["cases"]:
        if case["status"] != "ok" or broken:
            continue
        try:
            gc.collect()
            torch.cuda.empty_cache()
            params = dict(case["params"])
            fn, keep, _ = build_case(torch, series, params, case["seed"], props, device)
            with torch.inference_mode():
                timer.warm_up(fn)
                kernels, memory, cpu = profile_one_call(torch, fn)
            del fn, keep
            case["kernels"] = [{"name": n, "duration_s": d} for n, d in kernels]
            case["kernel_names"] = [n for n, _ in kernels]
            case["memory_operations"] = [{"name": n, "duration_s": d} for n, d in memory]
            case["cpu_ops"] = [c for c in cpu if c.startswith("aten::") or "cudnn" in c.lower()]
            case["launches"] = len(kernels)
            need = "aten::cudnn_convolution" if series["op"] == "conv2d_fwd" else "aten::_cudnn_rnn"
            case["checks"]["cudnn_path"] = need in cpu
            if not kernels:
                case["warnings"].append("the profile shows no kernels: kernel comparison impossible")
            elif need not in cpu:
                case.update(status="failed", reason=f"not the cuDNN path: the profile shows no {need} "
                            f"(aten ops: {', '.join(case['cpu_ops'][:6])})")
                status = 1
            if series["precision"] == "fp32" and any("tf32" in n.lower() for n in case["kernel_names"]):
                case["warnings"].append("a kernel name says tf32 although allow_tf32 is False")
            if series["op"] == "lstm_inference" and kernels:
                observed = "standard" if len(kernels) >= case["params"]["seq_length"] else "persistent"
                rule_says = case["params"]["algorithm"]
                case["checks"]["algorithm_observed"] = f"{observed} ({len(kernels)} launches per call)"
                if (observed == "standard") != (rule_says == "standard"):
                    case["warnings"].append(f"PyTorch's rule says {rule_says} but {len(kernels)} launches look "
                                            f"{observed}: params.algorithm set to what the profile shows")
                    case["params"]["algorithm"] = "standard" if observed == "standard" else "persistent_unknown"
                    case["algorithm"] = f"{observed} (observed)"
        except Exception as e:  # noqa: BLE001
            case["warnings"].append("profile failed: " + one_line(e))
        write()
    return status


def worker_main(args):
    series = series_spec(args.worker)
    out = {"series": series["name"], "environment": None, "cases": [], "errors": []}

    def write():
        atomic_write(args.worker_out, out)

    write()
    try:
        return run_series(series, args, out, write)
    except Exception as e:  # noqa: BLE001
        out["errors"].append(f"{series['name']}: {one_line(e)}")
        out["traceback"] = traceback.format_exc(limit=6)
        write()
        log(traceback.format_exc())
        return 1


# --------------------------------------------------------------------------
# Parent: one worker process per series, merged into one file


CONV_INPUTS = "randn"  # --inputs


def passthrough(args):
    items = ["--batches", ",".join(str(b) for b in args.batches), "--budget-s", str(args.budget_s),
             "--min-samples", str(args.min_samples), "--max-samples", str(args.max_samples),
             "--target-ci", str(args.target_ci), "--device", str(args.device), "--seed", str(args.seed)]
    if args.graph_copies:
        items += ["--graph-copies", str(args.graph_copies)]
    if args.timeroof_export:
        items += ["--timeroof-export", args.timeroof_export]
    if args.pin_core is not None:
        items += ["--pin-core", str(args.pin_core)]
    items += ["--inputs", args.inputs]
    return items


def main(argv=None):
    head, _, rest = __doc__.partition("\n\n")
    parser = argparse.ArgumentParser(description=head, epilog=rest,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", help="the JSON file to write (all series merged)")
    parser.add_argument("--series", type=lambda s: [series_spec(x) for x in s.split(",") if x],
                        help="comma-separated, default: " + ",".join(SERIES))
    parser.add_argument("--benchmark-pass", action="store_true",
                        help="also the conv2d series with cudnn.benchmark = True")
    parser.add_argument("--batches", type=parse_batches, default=DEFAULT_BATCHES,
                        help="1,2,4 or 1..1024 (powers of two; default 1..1024)")
    parser.add_argument("--budget-s", type=float, default=0.25, help="time budget per measured time (0.25)")
    parser.add_argument("--min-samples", type=int, default=20)
    parser.add_argument("--max-samples", type=int, default=2000)
    parser.add_argument("--target-ci", type=float, default=0.01, help="stop at +-this relative interval")
    parser.add_argument("--graph-copies", type=int, help="calls captured per graph (default: timeroof's rule)")
    parser.add_argument("--timeroof-export", help="take calls per sample and graph copies from this export")
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--inputs", choices=["randn", "uniform"], default="randn",
                        help="conv data: randn (weights scaled by 1/sqrt(fan-in), as frameworks "
                             "initialise) or uniform in [-1, 1) for input and weights, as timeroof "
                             "fills them (power under a cap depends on the data)")
    parser.add_argument("--seed", type=int, default=0x7157)
    parser.add_argument("--pin-core", type=int, help="pin the measuring thread to this core (default: not)")
    parser.add_argument("--time-limit-s", type=float, default=300,
                        help="stop starting series after this many seconds (default 300)")
    parser.add_argument("--worker-timeout-s", type=float, default=240, help="per series (default 240)")
    parser.add_argument("--no-isolate", action="store_true", help="all series in this process")
    parser.add_argument("--dry-run", action="store_true", help="print the cases, import nothing, measure nothing")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--worker-out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    global CONV_INPUTS
    CONV_INPUTS = args.inputs
    if args.worker:
        return worker_main(args)
    series_list = args.series or [series_spec(s) for s in SERIES]
    if args.benchmark_pass:
        series_list += [series_spec(s) for s in BENCHMARK_SERIES if s not in {x["name"] for x in series_list}]
    if args.dry_run:
        for s in series_list:
            for b in args.batches:
                params = case_params(s, b)
                print(f"{s['name']:28s} {json.dumps(params, sort_keys=True)}")
                print(f"{'':28s} {torch_call_text(s, params)}")
        return 0
    if not args.out:
        parser.error("--out is required (or --dry-run)")

    started = time.monotonic()
    doc = {"format": FORMAT, "schema_version": SCHEMA_VERSION,
           "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "command_line": " ".join([sys.executable] + sys.argv), "environment": None,
           "series": [], "cases": [], "errors": []}
    codes = []
    interrupted = False
    for s in series_list:
        remaining = args.time_limit_s - (time.monotonic() - started)
        if remaining < 10:
            doc["errors"].append(f"{s['name']}: not run, --time-limit-s {args.time_limit_s:g} reached")
            doc["series"].append({"name": s["name"], "rc": None, "seconds": 0, "error": "time limit"})
            log(f"torch_reference: {s['name']}: not run (time limit)")
            codes.append(1)
            continue
        t0 = time.monotonic()
        fd, part = tempfile.mkstemp(prefix="torch-ref-", suffix=".json")
        os.close(fd)
        os.unlink(part)
        rc, error = None, ""
        if args.no_isolate:
            worker_args = copy.copy(args)
            worker_args.worker, worker_args.worker_out = s["name"], part
            rc = worker_main(worker_args)
        else:
            cmd = [sys.executable, os.path.abspath(__file__), "--worker", s["name"], "--worker-out", part] \
                + passthrough(args)
            try:
                rc = subprocess.run(cmd, timeout=max(10, min(args.worker_timeout_s, remaining))).returncode
            except subprocess.TimeoutExpired:
                error = f"timed out after {min(args.worker_timeout_s, remaining):.0f} s (cases so far kept)"
            except KeyboardInterrupt:
                error = "interrupted (SIGINT; cases so far kept)"
                interrupted = True
            except OSError as e:
                error = one_line(e)
        part_doc = None
        with contextlib.suppress(OSError, ValueError):
            with open(part) as f:
                part_doc = json.load(f)
        with contextlib.suppress(OSError):
            os.unlink(part)
        if part_doc is None:
            error = error or f"worker exited with {rc} and wrote nothing"
        else:
            doc["cases"] += part_doc.get("cases", [])
            doc["errors"] += part_doc.get("errors", [])
            if doc["environment"] is None and part_doc.get("environment"):
                doc["environment"] = part_doc["environment"]
        if rc is not None and rc < 0:
            error = error or f"worker killed by signal {-rc}"
        if error:
            doc["errors"].append(f"{s['name']}: {error}")
            log(f"torch_reference: {s['name']}: {error}")
        cases = (part_doc or {}).get("cases", [])
        doc["series"].append({"name": s["name"], "rc": rc, "seconds": round(time.monotonic() - t0, 1),
                              "error": error, "cases": len(cases),
                              "ok": sum(1 for c in cases if c.get("status") == "ok")})
        codes.append(1 if error or rc is None else rc)
        atomic_write(args.out, doc)
        if interrupted:
            break
    atomic_write(args.out, doc)
    for s in doc["series"]:
        log(f"torch_reference: {s['name']}: {s.get('ok', 0)}/{s.get('cases', 0)} cases ok, rc {s['rc']}, "
            f"{s['seconds']} s{(' - ' + s['error']) if s['error'] else ''}")
    if codes and all(c == 2 for c in codes):
        return 2  # no usable PyTorch / CUDA / cuDNN in any series
    return 0 if all(c == 0 for c in codes) else 1


if __name__ == "__main__":
    sys.exit(main())
