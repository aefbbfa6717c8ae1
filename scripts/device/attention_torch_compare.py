#!/usr/bin/env python3
"""timeroof's attention points against PyTorch's scaled_dot_product_attention on
the same shapes (issue 18: T_stream within 5% of PyTorch's time where the same
kernels run). Runs ON THE GPU MACHINE; PyTorch is a reference, never a dependency.

    attention_torch_compare.py EXPORT.json   (timeroof export of a `sweep attention` run)

For each ok point: torch.nn.functional.scaled_dot_product_attention on the same
B, H, kv_heads, seq_q, seq_kv, D and type, in timeroof's layout (BSHD memory
viewed as [B, H, S, D]), with the cuDNN backend forced
(torch.nn.attention.sdpa_kernel(SDPBackend.CUDNN_ATTENTION)); where cuDNN
refuses, the row says why. fwd points run under no_grad (no statistics, as
timeroof's inference forward); bwd points time torch.autograd.grad of O with
respect to Q, K, V (cuDNN's backward plus PyTorch's own small kernels, so
informational). Causal: PyTorch's is_causal is top-left aligned, the same as
timeroof's bottom-right only for seq_q = seq_kv; a decode step (seq_q = 1) sees
every key either way and runs unmasked; other seq_q != seq_kv causal points are
skipped. Timing as timeroof's T_stream: calls back to back on one stream
between CUDA events, per call, the median of 7 rounds of >= 20 ms. PyTorch 2.11
carries its own cuDNN (9.19), timeroof runs the system's (9.14): the same
engines, not necessarily the same build. Prints each ratio and a summary; exit 0.
"""
import json
import statistics
import sys
import warnings

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

# The same timing as the GEMM comparison's (timeroof's T_stream): one definition.
from gemm_torch_compare import per_call_seconds

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}


def bshd(batch, seq, heads, dim, dtype, grad):
    t = torch.randn(batch, seq, heads, dim, device="cuda", dtype=dtype).transpose(1, 2)
    return t.detach().requires_grad_(grad)


def torch_call(par):
    # A point's params keep the sweep's values: 0 means "the same as" heads / seq_q.
    b, h, sq, d = par["batch"], par["heads"], par["seq_q"], par["head_dim"]
    hk, skv = par.get("kv_heads") or h, par.get("seq_kv") or sq
    dtype = DTYPES[par["precision"]] if "precision" in par else None
    causal = par["mask"] == "causal"
    if causal and sq != skv:
        if sq != 1:
            return None, "bottom-right causal with seq_q != seq_kv: PyTorch's is_causal is top-left"
        causal = False  # a decode step sees every key
    bwd = par["direction"] == "bwd"
    q = bshd(b, sq, h, d, dtype, bwd)
    k = bshd(b, skv, hk, d, dtype, bwd)
    v = bshd(b, skv, hk, d, dtype, bwd)
    gqa = hk != h

    def forward():
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)

    if not bwd:
        def fn():
            with torch.no_grad():
                forward()
        return fn, None
    out = forward()
    d_o = torch.randn_like(out)

    def fn():
        torch.autograd.grad(out, (q, k, v), d_o, retain_graph=True)
    return fn, None


def main():
    warnings.filterwarnings("ignore", category=UserWarning)
    run = json.load(open(sys.argv[1]))["runs"][0]
    rows = {"fwd": [], "bwd": []}
    print(f"{'point':70s} {'timeroof us':>11s} {'torch us':>9s} {'ratio':>6s}  timeroof plan")
    for p in run["points"]:
        par = dict(p["params"])
        par["precision"] = p.get("precision", par.get("precision"))
        stream = (p.get("timing") or {}).get("stream") or {}
        if p["status"] != "ok" or not stream.get("median_s") or par["precision"] not in DTYPES:
            continue
        label = (f"{par['direction']} {par['precision']} B{par['batch']} H{par['heads']}/"
                 f"{par.get('kv_heads') or par['heads']} S{par['seq_q']}x"
                 f"{par.get('seq_kv') or par['seq_q']} D{par['head_dim']} {par['mask']}")
        try:
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                fn, why = torch_call(par)
                if fn is None:
                    print(f"{label:70s} skipped: {why}")
                    continue
                theirs = per_call_seconds(fn)
        except RuntimeError as error:  # cuDNN refused the shape in PyTorch
            print(f"{label:70s} PyTorch's cuDNN backend refused: {str(error).splitlines()[0][:90]}")
            continue
        ours = stream["median_s"]
        ratio = ours / theirs
        rows[par["direction"]].append(ratio)
        print(f"{label:70s} {ours * 1e6:11.1f} {theirs * 1e6:9.1f} {ratio:6.3f}  "
              f"{p.get('algorithm', '')[:40]}")
        torch.cuda.empty_cache()
    for direction, values in rows.items():
        if values:
            within = sum(abs(r - 1) <= 0.05 for r in values)
            print(f"{direction}: {len(values)} points, T_stream / PyTorch median "
                  f"{statistics.median(values):.3f}, range {min(values):.3f} .. "
                  f"{max(values):.3f}; within 5%: {within} of {len(values)}")


if __name__ == "__main__":
    main()
