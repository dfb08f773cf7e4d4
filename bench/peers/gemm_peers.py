#!/usr/bin/env python3
"""Matrix multiplies and hidden layers as PyTorch and Triton users write them, timed the way kjit
times its kernels: L2 flushed before each call, CUDA events around one call, median of K. One JSON
object per line: {"op", "tool", "dtype", "m", "n", "k", "median_ms", "p10_ms", "p90_ms", "tflops"}
(row_peers.time_cold times each call).

    python3 bench/peers/gemm_peers.py [--repeat K] [--shapes 4096x4096x4096,8192x8192x8192]

Shapes are M x N x K: x is M x K, W is K x N, b has N values. Tools:
  bfloat16: cublas (x @ W), cublaslt_bias (torch.addmm(b, x, W): cuBLASLt's bias epilogue),
            eager_silu (silu(x @ W): two kernels), cublaslt_gelu (torch._addmm_activation(b, x, W, use_gelu=True): cuBLASLt's
            fused bias + GELU epilogue), eager_gelu and eager_tanh (torch.addmm, then the activation:
            two kernels), compile_gelu (torch.compile, mode given by --compile-mode, of addmm + GELU),
            triton (bench's own Triton matmul, the best of four configs, each timed)
  float32:  cublas_fp32 (x @ W with TF32 off), cublas_tf32 (TF32 on)
"""
import argparse
import json
import sys

import torch
import torch.nn.functional as F

from row_peers import time_cold

try:
    import triton
    import triton.language as tl
except ImportError:  # Triton ships with torch on CUDA; without it, its rows are skipped visibly
    triton = None

if triton is not None:
    @triton.jit
    def matmul_tiles(a, b, c, m, n, k, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr):
        # One program per BM x BN tile of C, programs ordered down groups of GROUP tile rows.
        pid = tl.program_id(0)
        tiles_m, tiles_n = tl.cdiv(m, BM), tl.cdiv(n, BN)
        per_group = GROUP * tiles_n
        first = pid // per_group * GROUP
        rows_in_group = min(tiles_m - first, GROUP)
        tm = first + (pid % per_group) % rows_in_group
        tn = (pid % per_group) // rows_in_group
        rm = tm * BM + tl.arange(0, BM)
        rn = tn * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k0 in range(0, k, BK):
            ta = tl.load(a + rm[:, None] * k + (k0 + rk)[None, :], mask=(rm[:, None] < m) & ((k0 + rk)[None, :] < k), other=0.0)
            tb = tl.load(b + (k0 + rk)[:, None] * n + rn[None, :], mask=((k0 + rk)[:, None] < k) & (rn[None, :] < n), other=0.0)
            acc = tl.dot(ta, tb, acc)
        tl.store(c + rm[:, None] * n + rn[None, :], acc.to(c.dtype.element_ty), mask=(rm[:, None] < m) & (rn[None, :] < n))

    TRITON_CONFIGS = [  # (BM, BN, BK, GROUP, warps, stages)
        (128, 256, 64, 8, 8, 3),
        (128, 128, 64, 8, 4, 4),
        (256, 128, 64, 8, 8, 3),
        (128, 128, 32, 8, 4, 4),
    ]

    def triton_matmul(x, w, config):
        bm, bn, bk, group, warps, stages = config
        m, k = x.shape
        n = w.shape[1]
        out = torch.empty(m, n, device=x.device, dtype=x.dtype)
        grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
        matmul_tiles[grid](x, w, out, m, n, k, BM=bm, BN=bn, BK=bk, GROUP=group, num_warps=warps, num_stages=stages)
        return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--shapes", default="4096x4096x4096,8192x8192x8192,8192x4096x4096")
    parser.add_argument("--compile-mode", default="max-autotune-no-cudagraphs")
    parser.add_argument("--no-fp32", action="store_true")
    parser.add_argument("--tools", default="", help="only these tools (comma-separated names as reported)")
    args = parser.parse_args()
    wanted = set(filter(None, args.tools.split(",")))

    def gelu_layer(x, w, b):
        return F.gelu(torch.addmm(b, x, w), approximate="tanh")

    compiled = torch.compile(gelu_layer, mode=args.compile_mode)
    if triton is None:
        print("triton is not installed: no triton figures", file=sys.stderr)
    for shape in args.shapes.split(","):
        m, n, k = (int(v) for v in shape.split("x"))
        flops = 2.0 * m * n * k

        def report(tool, dtype, f):
            if wanted and tool not in wanted:
                return
            try:
                median, p10, p90 = time_cold(lambda _: f(), None, args.repeat)  # f holds its operands
            except Exception as e:  # a tool that cannot run a shape is reported, not fatal
                print(json.dumps({"op": "gemm", "tool": tool, "dtype": dtype, "m": m, "n": n, "k": k,
                                  "error": str(e).splitlines()[0]}), flush=True)
                return
            print(json.dumps({"op": "gemm", "tool": tool, "dtype": dtype, "m": m, "n": n, "k": k, "median_ms": median,
                              "p10_ms": p10, "p90_ms": p90, "tflops": flops / (median * 1e-3) / 1e12}), flush=True)

        x = torch.rand(m, k, device="cuda", dtype=torch.bfloat16) * 2 - 1
        w = torch.randn(k, n, device="cuda", dtype=torch.bfloat16) * 0.02
        b = torch.rand(n, device="cuda", dtype=torch.bfloat16) * 0.2 - 0.1
        report("cublas", "bfloat16", lambda: x @ w)
        report("cublaslt_gelu", "bfloat16", lambda: torch._addmm_activation(b, x, w, use_gelu=True))
        report("eager_gelu", "bfloat16", lambda: F.gelu(torch.addmm(b, x, w), approximate="tanh"))
        report("eager_tanh", "bfloat16", lambda: torch.tanh(torch.addmm(b, x, w)))
        report("eager_silu", "bfloat16", lambda: F.silu(x @ w))
        report("cublaslt_bias", "bfloat16", lambda: torch.addmm(b, x, w))
        report("compile_gelu", "bfloat16", lambda: compiled(x, w, b))
        if triton is not None and (not wanted or "triton" in wanted):
            best = None
            for config in TRITON_CONFIGS:
                try:
                    median, _, _ = time_cold(lambda _: triton_matmul(x, w, config), None, 5)
                except Exception:  # a config this GPU cannot hold (shared memory) is skipped
                    continue
                if best is None or median < best[0]:
                    best = (median, config)
            if best is not None:
                report("triton", "bfloat16", lambda: triton_matmul(x, w, best[1]))
        if not args.no_fp32:
            x32, w32 = x.float(), w.float()
            torch.backends.cuda.matmul.allow_tf32 = False
            report("cublas_fp32", "float32", lambda: x32 @ w32)
            torch.backends.cuda.matmul.allow_tf32 = True
            report("cublas_tf32", "float32", lambda: x32 @ w32)
            torch.backends.cuda.matmul.allow_tf32 = False


if __name__ == "__main__":
    main()
