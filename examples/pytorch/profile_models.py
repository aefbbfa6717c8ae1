#!/usr/bin/env python3
"""A PyTorch workload for `timeroof profile` (issue 17): a torchvision ResNet-50 and a
small transformer encoder block, random weights (nothing is downloaded), a few
iterations, with one NVTX range per iteration and per module, so timeroof's
profile analysis shows each layer's kernels, times and roofline.

    timeroof profile -- python3 examples/pytorch/profile_models.py --model resnet50

NVTX ranges per module come from forward hooks (`torch.cuda.nvtx.range_push/pop`):
the module tree becomes the range tree (model -> layer1 -> layer1.0 -> conv1).
`--emit-nvtx` instead uses `torch.autograd.profiler.emit_nvtx()`, which names every
aten operator (forward and backward) but says nothing of modules.

The script times each iteration itself with CUDA events and prints the times, so
the profile's NVTX "iteration" ranges can be checked against the program's own
clock. Runs on any CUDA GPU; needs torch and torchvision.
"""
import argparse
import contextlib
import sys

import torch


def nvtx_per_module(model, leaves_only=False, emitting=lambda: True):
    """Pushes an NVTX range named by the module's path around each module's forward,
    while `emitting()` says so (the hooks stay, so what their Python costs stays)."""
    handles = []
    for name, module in model.named_modules():
        if leaves_only and any(True for _ in module.children()):
            continue
        label = name or type(model).__name__

        def push(_module, _inputs, label=label):
            if emitting():
                torch.cuda.nvtx.range_push(label)

        def pop(_module, _inputs, _output):
            if emitting():
                torch.cuda.nvtx.range_pop()

        handles.append(module.register_forward_pre_hook(push))
        handles.append(module.register_forward_hook(pop))
    return handles


def resnet50(batch, dtype):
    import torchvision

    model = torchvision.models.resnet50(weights=None)
    inputs = torch.randn(batch, 3, 224, 224)
    return model, inputs.to(dtype), lambda out: out.float().sum()


def transformer_block(batch, dtype, sequence=512, width=1024, heads=16):
    model = torch.nn.TransformerEncoderLayer(
        d_model=width, nhead=heads, dim_feedforward=4 * width, batch_first=True
    )
    inputs = torch.randn(batch, sequence, width)
    return model, inputs.to(dtype), lambda out: out.float().sum()


MODELS = {"resnet50": resnet50, "transformer": transformer_block}
DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def run(name, args):
    model, inputs, loss_of = MODELS[name](args.batch, DTYPES[args.dtype])
    model = model.cuda().to(DTYPES[args.dtype])
    if args.channels_last and inputs.dim() == 4:
        model = model.to(memory_format=torch.channels_last)
        inputs = inputs.to(memory_format=torch.channels_last)
    inputs = inputs.cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3) if args.train else None
    if not args.train:
        model.eval()
    per_module = not args.emit_nvtx and not args.no_module_ranges
    # --alternate-module-ranges: every other iteration without its module ranges, so
    # what the ranges cost is measured within one process (scripts/device/tracing_cost.py).
    emitting, pushes = [True], [0]

    def emit():
        pushes[0] += emitting[0]  # a pop's call counts too: halved below
        return emitting[0]

    handles = nvtx_per_module(model, args.leaves_only, emit) if per_module else []
    nvtx = torch.autograd.profiler.emit_nvtx() if args.emit_nvtx else contextlib.nullcontext()
    # PyTorch's own CUPTI tracer (Kineto) over the same iterations: the reference
    # for what tracing kernels alone costs (scripts/device/tracing_cost.py).
    kineto = (torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA])
              if args.torch_profiler else contextlib.nullcontext())
    times_ms, times_without_ms = [], []
    with kineto, nvtx, torch.set_grad_enabled(args.train):
        for i in range(args.warmup + args.iterations):
            measured = i >= args.warmup
            emitting[0] = not args.alternate_module_ranges or i % 2 == 0
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.nvtx.range_push(f"{name} iteration" if measured else f"{name} warm-up")
            start.record()
            out = model(inputs)
            if args.train:
                torch.cuda.nvtx.range_push("backward")
                loss_of(out).backward()
                torch.cuda.nvtx.range_pop()
                torch.cuda.nvtx.range_push("optimizer")
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
                torch.cuda.nvtx.range_pop()
            end.record()
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_pop()
            if measured:
                (times_ms if emitting[0] else times_without_ms).append(start.elapsed_time(end))
    for handle in handles:
        handle.remove()
    times = ", ".join(f"{t:.3f}" for t in times_ms)
    print(f"{name} {args.dtype} batch {args.batch}: iteration times (CUDA events, ms): {times}")
    if times_without_ms:
        iterations_with = (args.warmup + args.iterations + 1) // 2
        ranges = pushes[0] // (2 * iterations_with)
        times = ", ".join(f"{t:.3f}" for t in times_without_ms)
        print(f"{name} {args.dtype} batch {args.batch}: iteration times without its {ranges} "
              f"module ranges (CUDA events, ms): {times}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=[*MODELS, "both"], default="both")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--dtype", choices=DTYPES, default="fp16")
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--train", action="store_true", help="forward, backward and an SGD step")
    parser.add_argument("--channels-last", action="store_true", help="NHWC activations (ResNet)")
    parser.add_argument("--leaves-only", action="store_true", help="ranges on leaf modules only")
    parser.add_argument("--emit-nvtx", action="store_true", help="aten operator ranges instead")
    parser.add_argument("--no-module-ranges", action="store_true",
                        help="only the iteration's range, none per module")
    parser.add_argument("--alternate-module-ranges", action="store_true",
                        help="every other iteration without its module ranges (the hooks "
                             "stay): what the ranges cost, within one process")
    parser.add_argument("--torch-profiler", action="store_true",
                        help="trace the run with torch.profiler (CUDA activities only), "
                             "as a reference tracer")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("profile_models.py: no CUDA GPU visible to PyTorch", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    for name in MODELS if args.model == "both" else [args.model]:
        run(name, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
