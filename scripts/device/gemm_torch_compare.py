#!/usr/bin/env python3
"""timeroof's GEMM points against PyTorch on the same shapes, kernel by kernel
(issue 18: T_stream within 5% of PyTorch's time where the same kernels run). Runs
ON THE GPU MACHINE; PyTorch is a reference, never a dependency.

    gemm_torch_compare.py EXPORT.json ... [--json OUT]   (`timeroof export` of gemm sweeps)

For each ok gemm / gemm_batched point in fp32, tf32, fp16 or bf16, the same
problem through torch.matmul, timed and compared by torch_reference.PointComparison
(T_stream's way of timing, the kernels each side ran, the verdict).

The same problem, the same cuBLAS call. timeroof's D (m x n) = op(A) op(B) is
column-major, so in PyTorch's row-major memory D is an (n, m) tensor,
D = op(B)^T op(A)^T; A stored transposed (trans_a t, timeroof's default) is a
row-major (m, k) tensor, B not transposed a row-major (n, k) one. The default TN
point is then torch.mm(B, A.t()) = F.linear(B, A), which PyTorch hands to cuBLAS as
gemm(t, n, m, n, k): timeroof's call. bias (an m-vector: one per row of the
column-major D) is the last dimension's bias of the (n, m) result: torch.addmm, with
bias_relu / bias_gelu through torch._addmm_activation (cuBLASLt's bias epilogues,
GELU in its tanh form as timeroof's); an epilogue without a bias, and an epilogue on
a batched GEMM, have no PyTorch call and are skipped. tf32 sets
torch.backends.cuda.matmul.allow_tf32, fp32 clears it.

PyTorch's torch.mm goes through cublasGemmEx by default, whose own heuristic may
pick another kernel than cuBLASLt's first heuristic result (timeroof's); where the
kernels differ, the row is measured again with
torch.backends.cuda.preferred_blas_library("cublaslt"), PyTorch's cuBLASLt path.
"""
import contextlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_reference as ref  # noqa: E402

PRECISIONS = ("fp32", "tf32", "fp16", "bf16")


def operands(torch, par, dtype):
    """op(A) (m x k) and op(B) (k x n) as PyTorch views of timeroof's column-major storage."""
    m, n, k, batch = par["m"], par["n"], par["k"], par.get("batch", 1)
    rand = lambda *shape: torch.rand(batch, *shape, device="cuda", dtype=dtype) * 2 - 1  # noqa: E731
    op_a = rand(m, k) if par.get("trans_a", "t") == "t" else rand(k, m).transpose(1, 2)
    op_b = rand(n, k).transpose(1, 2) if par.get("trans_b", "n") == "n" else rand(k, n)
    return op_a, op_b


def gemm_call(torch, par, precision):
    """(fn, "") for the point's GEMM in PyTorch, or (None, why not)."""
    epilogue = par.get("epilogue", "none")
    batch = par.get("batch", 1)
    if epilogue in ("relu", "gelu"):
        return None, f"epilogue {epilogue} without a bias: PyTorch has no such cuBLASLt call"
    if epilogue != "none" and batch > 1:
        return None, f"epilogue {epilogue} on a batched GEMM: PyTorch has no such call"
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    dtype = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16,
             "bf16": torch.bfloat16}[precision]
    op_a, op_b = operands(torch, par, dtype)
    # D (n x m, row-major) = op(B)^T op(A)^T
    left, right = op_b.transpose(1, 2), op_a.transpose(1, 2)
    if batch > 1:
        return (lambda: torch.bmm(left, right)), ""
    left, right = left[0], right[0]
    if epilogue == "none":
        return (lambda: torch.mm(left, right)), ""
    bias = torch.rand(par["m"], device="cuda", dtype=dtype) - 0.5
    if epilogue == "bias":
        return (lambda: torch.addmm(bias, left, right)), ""
    gelu = epilogue == "bias_gelu"
    return (lambda: torch._addmm_activation(bias, left, right, use_gelu=gelu)), ""


@contextlib.contextmanager
def blas_library(torch, library):
    """PyTorch's preferred BLAS library set to `library` while the block runs."""
    previous = torch.backends.cuda.preferred_blas_library()
    torch.backends.cuda.preferred_blas_library(library)
    try:
        yield
    finally:
        torch.backends.cuda.preferred_blas_library(previous)


def rows(torch, comparison, points):
    for p in points:
        par, precision = p["params"], ref.point_precision(p)
        label = (f"{p['op']} {precision} {par['m']}x{par['n']}x{par['k']} b{par.get('batch', 1)} "
                 f"{par.get('trans_a', 't')}{par.get('trans_b', 'n')} {par.get('epilogue', 'none')}")
        if precision not in PRECISIONS:
            comparison.skip(label, f"precision {precision}: compared in fp32, tf32, fp16, bf16 only")
            continue
        fn, why = gemm_call(torch, par, precision)
        if fn is None:
            comparison.skip(label, why)
            continue
        comparison.compare(label, p, [("", fn),
                                      ("cuBLASLt", fn, lambda: blas_library(torch, "cublaslt"))])
    torch.backends.cuda.matmul.allow_tf32 = False


if __name__ == "__main__":
    sys.exit(ref.comparison_main("GEMM: timeroof (cuBLASLt) vs PyTorch torch.mm",
                                 lambda op: op in ("gemm", "gemm_batched"), rows))
