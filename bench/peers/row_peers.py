#!/usr/bin/env python3
"""Row softmax, layer norm and RMS norm as PyTorch and Triton users write them, timed the way kjit
times its kernels: L2 flushed before each call, CUDA events around one call, median of K. One JSON
object per line: {"op", "tool", "dtype", "rows", "cols", "median_ms", "p10_ms", "p90_ms"}.

    python3 bench/peers/row_peers.py [--repeat K] [--shapes 4096x4096,32768x1024,1024x32768]

Tools per op:
  softmax:   copy (x.clone(): one read + one write, the roofline), torch_eager (torch.softmax),
             torch_compile, triton_row (a one-block-per-row Triton kernel: the row in registers),
             unfused_eager (max, exp(x - max), sum, divide: four kernels, as written by hand)
  layernorm: torch_eager (F.layer_norm without affine), torch_compile
  rmsnorm:   torch_eager (F.rms_norm without weight), torch_compile
  causal_softmax (x * 0.125, entries with col > row masked to -inf, then softmax, as
             configs/causal_softmax.json): torch_eager (torch.softmax(x.masked_fill(mask, -inf)),
             the boolean mask made once, outside the timing), torch_compile (the same function),
             triton_row (the one-block-per-row kernel masking by its offsets: no mask in memory)

    --ops softmax,causal_softmax   only these ops (default: all)
"""
import argparse
import json
import statistics
import sys

import torch
import torch.nn.functional as F

try:
    import triton
    import triton.language as tl
except ImportError:  # Triton ships with torch on CUDA; without it, its row is skipped visibly
    triton = None


if triton is not None:
    @triton.jit
    def softmax_rows(out_ptr, in_ptr, cols, BLOCK: tl.constexpr):
        # One program per row; the whole row is one block of registers.
        row = tl.program_id(0).to(tl.int64)
        offsets = tl.arange(0, BLOCK)
        mask = offsets < cols
        x = tl.load(in_ptr + row * cols + offsets, mask=mask, other=-float("inf")).to(tl.float32)
        e = tl.exp(x - tl.max(x, axis=0))
        y = e / tl.sum(e, axis=0)
        tl.store(out_ptr + row * cols + offsets, y.to(out_ptr.dtype.element_ty), mask=mask)

    @triton.jit
    def causal_softmax_rows(out_ptr, in_ptr, cols, scale, BLOCK: tl.constexpr):
        # As softmax_rows, with x * scale and every column after the row's own index masked.
        row = tl.program_id(0).to(tl.int64)
        offsets = tl.arange(0, BLOCK)
        mask = offsets < cols
        x = tl.load(in_ptr + row * cols + offsets, mask=mask, other=-float("inf")).to(tl.float32) * scale
        x = tl.where(offsets > row, -float("inf"), x)
        e = tl.exp(x - tl.max(x, axis=0))
        y = e / tl.sum(e, axis=0)
        tl.store(out_ptr + row * cols + offsets, y.to(out_ptr.dtype.element_ty), mask=mask)

    def launch_rows(kernel, x, *scalars):
        rows, cols = x.shape
        out = torch.empty_like(x)
        block = triton.next_power_of_2(cols)
        warps = 4 if block <= 2048 else 8 if block <= 8192 else 16
        kernel[(rows,)](out, x, cols, *scalars, BLOCK=block, num_warps=warps)
        return out

    def triton_softmax(x):
        return launch_rows(softmax_rows, x)

    def triton_causal_softmax(x):
        return launch_rows(causal_softmax_rows, x, CAUSAL_SCALE)


CAUSAL_SCALE = 0.125
causal_masks = {}  # (rows, cols) → the boolean mask, made once per shape as a user would


def causal_mask(x):
    shape = tuple(x.shape)
    if shape not in causal_masks:
        causal_masks[shape] = torch.ones(shape, dtype=torch.bool, device=x.device).triu(1)
    return causal_masks[shape]


def masked_softmax(x, mask):
    return torch.softmax((x * CAUSAL_SCALE).masked_fill(mask, -float("inf")), dim=1)


def unfused_softmax(x):
    m = x.amax(dim=1, keepdim=True)
    e = torch.exp(x - m)
    return e / e.sum(dim=1, keepdim=True)


def print_timed(call, row, repeat, metrics):
    """Times call (time_cold(call, None, repeat)) and prints row's JSON line with the median, its
    spread and metrics(median), a dict; where the call raises (a backend that refuses the shape,
    memory run out), the line holds that error instead, so the run goes on."""
    try:
        median, p10, p90 = time_cold(call, None, repeat)
    except RuntimeError as e:
        print(json.dumps({**row, "error": str(e).splitlines()[0][:200]}), flush=True)
        torch.cuda.empty_cache()
        return
    print(json.dumps({**row, "median_ms": median, "p10_ms": p10, "p90_ms": p90, **metrics(median)}), flush=True)


def time_cold(f, x, repeat):
    flush = torch.empty(512 * 1024 * 1024, dtype=torch.uint8, device="cuda")  # > 8 × the H200's L2
    for _ in range(3):
        f(x)
    torch.cuda.synchronize()
    samples = []
    for _ in range(repeat):
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        f(x)
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end))
    samples.sort()
    return statistics.median(samples), samples[len(samples) // 10], samples[(9 * len(samples)) // 10]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--shapes", default="4096x4096,32768x1024,1024x32768")
    parser.add_argument("--dtypes", default="float32,bfloat16")
    parser.add_argument("--ops", default="softmax,layernorm,rmsnorm,causal_softmax")
    args = parser.parse_args()
    compiled = {}

    def compile_once(name, f):
        if name not in compiled:
            compiled[name] = torch.compile(f)
        return compiled[name]

    tools = {
        "softmax": {
            "copy": lambda x: x.clone(),
            "torch_eager": lambda x: torch.softmax(x, dim=1),
            "torch_compile": lambda x: compile_once("softmax", lambda t: torch.softmax(t, dim=1))(x),
            "unfused_eager": unfused_softmax,
        },
        "layernorm": {
            "torch_eager": lambda x: F.layer_norm(x, (x.shape[1],), eps=1e-5),
            "torch_compile": lambda x: compile_once("layernorm", lambda t: F.layer_norm(t, (t.shape[1],), eps=1e-5))(x),
        },
        "rmsnorm": {
            "torch_eager": lambda x: F.rms_norm(x, (x.shape[1],), eps=1e-6),
            "torch_compile": lambda x: compile_once("rmsnorm", lambda t: F.rms_norm(t, (t.shape[1],), eps=1e-6))(x),
        },
        "causal_softmax": {
            "torch_eager": lambda x: masked_softmax(x, causal_mask(x)),
            "torch_compile": lambda x: compile_once("causal_softmax", masked_softmax)(x, causal_mask(x)),
        },
    }
    tools = {op: by_tool for op, by_tool in tools.items() if op in args.ops.split(",")}
    if triton is not None:
        if "softmax" in tools:
            tools["softmax"]["triton_row"] = triton_softmax
        if "causal_softmax" in tools:
            tools["causal_softmax"]["triton_row"] = triton_causal_softmax
    else:
        print("triton is not installed: no triton_row figures", file=sys.stderr)
    for shape in args.shapes.split(","):
        rows, cols = (int(v) for v in shape.split("x"))
        for dtype in args.dtypes.split(","):
            x = torch.randn(rows, cols, device="cuda", dtype=getattr(torch, dtype)) * 4
            for op, by_tool in tools.items():
                for tool, f in by_tool.items():
                    try:
                        median, p10, p90 = time_cold(f, x, args.repeat)
                    except Exception as e:  # a tool that cannot run a shape is reported, not fatal
                        print(json.dumps({"op": op, "tool": tool, "dtype": dtype, "rows": rows, "cols": cols,
                                          "error": str(e).splitlines()[0]}), flush=True)
                        continue
                    print(json.dumps({"op": op, "tool": tool, "dtype": dtype, "rows": rows, "cols": cols,
                                      "median_ms": median, "p10_ms": p10, "p90_ms": p90}), flush=True)


if __name__ == "__main__":
    main()
