#!/usr/bin/env python3
"""The GEMM family's GPU figures as tables (scripts/gpu-check.sh gemm-odd and gemm write them):

    python3 scripts/gemm_table.py DIR [--ladder] [--plot PNG]

DIR holds the parts' output, loose or (as committed) packed in .tgz archives (scripts/run_files.py reads both).

Odd shapes: how many points passed (DIR/gemm_odd/*.json). The ladder: each kjit variant's median
cold time over the rounds (DIR/gemm/SHAPE.VARIANT.ROUND.json), its TFLOP/s and its ratio to the
peers measured in the same run (DIR/gemm_peers.jsonl): cuBLAS bf16 or fp32 for a matmul alone,
cuBLASLt's GELU epilogue and eager addmm + activation for a hidden layer.
"""
import argparse
import fnmatch
import json
import os
import statistics
from collections import defaultdict

from run_files import files_of


def records(files, pattern):
    """(path, records) of the JSON files whose path matches pattern, in order."""
    return sorted((name, json.loads(text)) for name, text in files.items() if fnmatch.fnmatch(name, pattern))


def plot(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shapes = sorted({shape for shape, _, _ in rows}, key=lambda s: [int(v) for v in s.split("x")])
    ladder = ["simt_f32", "cublas_fp32", "simt_bf16", "mma", "wgmma", "cublas", "triton", "cublaslt_gelu", "wgmma_gelu"]
    tools = [tool for tool in ladder if any(name == tool for _, name, _ in rows)]  # what the call ran
    fig, ax = plt.subplots(figsize=(11, 4.5))
    width = 0.8 / len(tools)
    for t, tool in enumerate(tools):
        values = [next((tf for s, name, tf in rows if s == shape and name == tool), 0) for shape in shapes]
        bars = ax.bar([i + t * width for i in range(len(shapes))], values, width, label=tool)
        ax.bar_label(bars, fmt="%.0f", fontsize=7)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(shapes))], [s.replace("x", " × ") for s in shapes])
    ax.set_ylabel("TFLOP/s (cold median)")
    ax.set_title("The GEMM ladder on an H200: kjit's rungs beside cuBLAS and Triton (M × N × K)")
    ax.set_ylim(0, 1000)
    ax.legend(ncol=len(tools), fontsize=8, loc="upper center")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def shape_title(shape):
    """4096x4096x4096 as 4096³, others as M × N × K."""
    m, n, k = shape.split("x")
    return f"{m}³" if m == n == k else f"{m} × {n} × {k}"


def ladder(shapes, kjit, peers):
    """The ladder as docs/gemm.md shows it: TFLOP/s of each rung at its auto launch and of the peers,
    each rung's share of the cuBLAS it is measured against in bold, times in ms where they matter."""
    lines = ["| M × N × K; TFLOP/s (in bold: % of the cuBLAS beside) | simt float32 | cuBLAS fp32 | simt bf16 | mma bf16 | wgmma bf16 | cuBLAS bf16 | Triton (best of 4) | cuBLAS tf32 |",
             "|---|---|---|---|---|---|---|---|---|"]
    for shape in shapes:
        m, n, k = (int(v) for v in shape.split("x"))
        tflops = lambda ms: 2.0 * m * n * k / (ms * 1e-3) / 1e12
        ms_of = {variant: statistics.median(r["kernel_cold_median_ms"] for r in kjit[(shape, variant)])
                 for variant in ("simt_f32", "simt_bf16", "mma", "wgmma") if kjit.get((shape, variant))}
        ms_of.update({tool: peers[(shape, tool)] for tool in ("cublas_fp32", "cublas", "triton", "cublas_tf32") if (shape, tool) in peers})

        def cell(name, against=None, with_ms=False):
            if name not in ms_of:
                return "-"
            notes = [f"**{ms_of[against] / ms_of[name] * 100:.0f} %**"] if against in ms_of else []
            notes += [f"{ms_of[name]:.3f} ms"] if with_ms else []
            return f"{tflops(ms_of[name]):.{1 if name.startswith('simt') or name == 'cublas_fp32' else 0}f}" + (f" ({'; '.join(notes)})" if notes else "")

        lines.append(f"| {shape_title(shape)} | {cell('simt_f32', 'cublas_fp32')} | {cell('cublas_fp32')} | {cell('simt_bf16')} | "
                     f"{cell('mma', 'cublas')} | {cell('wgmma', 'cublas', True)} | {cell('cublas', None, True)} | "
                     f"{cell('triton', None, True)} | {cell('cublas_tf32')} |")
    return lines


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("dir")
    parser.add_argument("--plot")
    parser.add_argument("--ladder", action="store_true", help="print the ladder alone, as docs/gemm.md shows it")
    args = parser.parse_args()
    out = args.dir
    files = files_of(out)
    odd = [r for _, found in records(files, "gemm_odd/*.json") for r in found]
    if odd and not args.ladder:
        passed = [r for r in odd if r["status"] == "PASS"]
        print(f"odd shapes: {len(passed)} of {len(odd)} PASS")
        for r in odd:
            if r["status"] != "PASS":
                print(f"  {r['status']}: {r['shape']} {r['variant']}: {r.get('first_bad') or r.get('error')}")
        print()

    kjit = defaultdict(list)  # (shape, variant) → [(median ms, record)]
    for path, found in records(files, "gemm/*.json"):
        shape, variant, _round, _ = os.path.basename(path).split(".")
        for r in found:
            if r["status"] == "PASS":
                kjit[(shape, variant)].append(r)
            else:
                print(f"{shape} {variant}: {r['status']} {r.get('first_bad') or r.get('error')}")
    peers = {}
    for line in files.get("gemm_peers.jsonl", "").splitlines():
        p = json.loads(line)
        if "median_ms" in p:
            peers[(f"{p['m']}x{p['n']}x{p['k']}", p["tool"])] = p["median_ms"]
    shapes = sorted({shape for shape, _ in kjit}, key=lambda s: [int(v) for v in s.split("x")])
    against = {  # the variant, and the peer it is measured against
        "simt_f32": "cublas_fp32",
        "simt_bf16": "cublas",
        "mma": "cublas",
        "mma_tanh": "cublaslt_gelu",
        "mma_gelu": "cublaslt_gelu",
        "mma_gelu_separate": "eager_gelu",
        "wgmma": "cublas",
        "wgmma_bias": "cublaslt_gelu",
        "wgmma_tanh": "cublaslt_gelu",
        "wgmma_tanh_fast": "cublaslt_gelu",
        "wgmma_gelu": "cublaslt_gelu",
        "wgmma_gelu_fast": "cublaslt_gelu",
        "wgmma_gelu_separate": "eager_gelu",
        "wgmma_pingpong": "cublas",
        "wgmma_pingpong_gelu": "cublaslt_gelu",
        "wgmma_pingpong_gelu_fast": "cublaslt_gelu",
        "wgmma_cluster": "cublas",
    }
    if args.ladder:
        print("\n".join(ladder(shapes, kjit, peers)))
        return
    plotted = []  # (shape, tool, TFLOP/s)
    print("| M × N × K | kjit variant | median ms | TFLOP/s | registers | peer | peer ms | kjit / peer speed |")
    print("|---|---|---|---|---|---|---|---|")
    for shape in shapes:
        m, n, k = (int(v) for v in shape.split("x"))
        for variant, peer in against.items():
            rs = kjit.get((shape, variant))
            if not rs:
                continue
            median = statistics.median(r["kernel_cold_median_ms"] for r in rs)
            tflops = 2.0 * m * n * k / (median * 1e-3) / 1e12
            plotted.append((shape, variant, tflops))
            peer_ms = peers.get((shape, peer))
            ratio = f"{peer_ms / median:.3f}" if peer_ms else "–"
            shown_peer = f"{peer_ms:.4f}" if peer_ms else "–"
            print(f"| {shape} | {variant} | {median:.4f} | {tflops:.1f} | {rs[0]['registers']} | {peer} | {shown_peer} | {ratio} |")
    if peers:
        print()
        print("| M × N × K | peer | median ms | TFLOP/s |")
        print("|---|---|---|---|")
        for (shape, tool), ms in sorted(peers.items()):
            m, n, k = (int(v) for v in shape.split("x"))
            tflops = 2.0 * m * n * k / (ms * 1e-3) / 1e12
            plotted.append((shape, tool, tflops))
            print(f"| {shape} | {tool} | {ms:.4f} | {tflops:.1f} |")
    if args.plot:
        plot(plotted, args.plot)


if __name__ == "__main__":
    main()
