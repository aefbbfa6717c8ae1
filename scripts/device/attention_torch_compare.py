#!/usr/bin/env python3
"""timeroof's attention points against PyTorch's scaled_dot_product_attention on
the same shapes, kernel by kernel (issue 18: T_stream within 5% of PyTorch's time
where the same kernels run). Runs ON THE GPU MACHINE; PyTorch is a reference, never
a dependency.

    attention_torch_compare.py EXPORT.json ... [--json OUT]   (`timeroof export` of attention sweeps)

For each ok point: torch.nn.functional.scaled_dot_product_attention on the same
B, H, kv_heads, seq_q, seq_kv, D and type, in timeroof's layout (BSHD memory
viewed as [B, H, S, D]), with the cuDNN backend forced
(torch.nn.attention.sdpa_kernel(SDPBackend.CUDNN_ATTENTION)); where cuDNN
refuses, the row says why. Timed and compared by torch_reference.PointComparison
(T_stream's way of timing, the kernels each side ran, the verdict).

fwd points: no input requires grad (no statistics, as timeroof's inference forward). bwd
points first time torch.autograd.grad of O with respect to Q, K, V (what a training
step runs: cuDNN's backward plus whatever autograd adds); where that runs other
kernels than timeroof's, the row is measured again calling PyTorch's cuDNN backward
op itself (aten::_scaled_dot_product_cudnn_attention_backward on the forward's O and
statistics). Causal: PyTorch's is_causal is top-left aligned, the same as timeroof's
bottom-right only for seq_q = seq_kv; a decode step (seq_q = 1) sees every key either
way and runs unmasked; other seq_q != seq_kv causal points are skipped. PyTorch 2.11
carries its own cuDNN (9.19), timeroof runs the system's (9.14): kernel names tell
whether both chose the same engine.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_reference as ref  # noqa: E402


def bshd(torch, batch, seq, heads, dim, dtype, grad):
    t = torch.randn(batch, seq, heads, dim, device="cuda", dtype=dtype).transpose(1, 2)
    return t.detach().requires_grad_(grad)


def attention_calls(torch, par, precision):
    """([(note, fn), ...], "") for the point in PyTorch, or ([], why not)."""
    F = torch.nn.functional
    # A point's params keep the sweep's values: 0 means "the same as" heads / seq_q.
    b, h, sq, d = par["batch"], par["heads"], par["seq_q"], par["head_dim"]
    hk, skv = par.get("kv_heads") or h, par.get("seq_kv") or sq
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[precision]
    causal = par["mask"] == "causal"
    if causal and sq != skv:
        if sq != 1:
            return [], "bottom-right causal with seq_q != seq_kv: PyTorch's is_causal is top-left"
        causal = False  # a decode step sees every key
    bwd = par["direction"] == "bwd"
    q, k, v = (bshd(torch, b, s, heads, d, dtype, bwd) for s, heads in ((sq, h), (skv, hk), (skv, hk)))
    gqa = hk != h

    def forward():
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)

    if not bwd:  # q, k, v need no grad: the inference forward, no statistics
        return [("", forward)], ""
    out = forward()
    d_o = torch.randn_like(out)

    def autograd():
        torch.autograd.grad(out, (q, k, v), d_o, retain_graph=True)

    calls = [("autograd", autograd)]
    aten = torch.ops.aten
    forward_outputs = []

    def cudnn_backward():
        if not forward_outputs:  # in the warm-up's first call, never timed
            with torch.no_grad():
                # (output, logsumexp, cum_seq_q, cum_seq_k, max_q, max_k, philox_seed,
                #  philox_offset, debug_attn_mask)
                forward_outputs.extend(aten._scaled_dot_product_cudnn_attention(
                    q, k, v, None, True, 0.0, causal, False))
        f = forward_outputs
        aten._scaled_dot_product_cudnn_attention_backward(
            d_o, q, k, v, f[0], f[1], f[6], f[7], None, f[2], f[3], f[4], f[5], 0.0, causal)

    calls.append(("aten cuDNN backward op", cudnn_backward))
    return calls, ""


def rows(torch, comparison, points):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    for p in points:
        par, precision = dict(p["params"]), ref.point_precision(p)
        label = (f"{par['direction']} {precision} B{par['batch']} H{par['heads']}/"
                 f"{par.get('kv_heads') or par['heads']} S{par['seq_q']}x"
                 f"{par.get('seq_kv') or par['seq_q']} D{par['head_dim']} {par['mask']}")
        if precision not in ("fp16", "bf16"):
            comparison.skip(label, f"precision {precision}")
            continue
        try:
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                candidates, why = attention_calls(torch, par, precision)
                if not candidates:
                    comparison.skip(label, why)
                    continue
                comparison.compare(label, p, candidates)
        except RuntimeError as error:  # cuDNN refused the shape in PyTorch
            comparison.skip(label, "PyTorch's cuDNN backend refused: " + ref.one_line(error))


if __name__ == "__main__":
    sys.exit(ref.comparison_main("attention: timeroof (cuDNN graph) vs PyTorch SDPA (cuDNN backend)",
                                 lambda op: op.startswith("attention"), rows))
