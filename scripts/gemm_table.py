#!/usr/bin/env python3
"""The GEMM family's GPU figures as tables (scripts/gpu-check.sh gemm-odd and gemm write them):

    python3 scripts/gemm_table.py DIR

Odd shapes: how many points passed (DIR/gemm_odd/*.json). The ladder: each kjit variant's median
cold time over the rounds (DIR/gemm/SHAPE.VARIANT.ROUND.json), its TFLOP/s and its ratio to the
peers measured in the same run (DIR/gemm_peers.jsonl): cuBLAS bf16 or fp32 for a matmul alone,
cuBLASLt's GELU epilogue and eager addmm + activation for a hidden layer.
"""
import glob
import json
import os
import statistics
import sys
from collections import defaultdict


def records(path):
    with open(path) as f:
        return json.load(f)


def main():
    out = sys.argv[1]
    odd = [r for path in sorted(glob.glob(os.path.join(out, "gemm_odd", "*.json"))) for r in records(path)]
    if odd:
        passed = [r for r in odd if r["status"] == "PASS"]
        print(f"odd shapes: {len(passed)} of {len(odd)} PASS")
        for r in odd:
            if r["status"] != "PASS":
                print(f"  {r['status']}: {r['shape']} {r['variant']}: {r.get('first_bad') or r.get('error')}")
        print()

    kjit = defaultdict(list)  # (shape, variant) → [(median ms, record)]
    for path in glob.glob(os.path.join(out, "gemm", "*.json")):
        shape, variant, _round, _ = os.path.basename(path).split(".")
        for r in records(path):
            if r["status"] == "PASS":
                kjit[(shape, variant)].append(r)
            else:
                print(f"{shape} {variant}: {r['status']} {r.get('first_bad') or r.get('error')}")
    peers = {}
    peers_path = os.path.join(out, "gemm_peers.jsonl")
    if os.path.exists(peers_path):
        for line in open(peers_path):
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
    }
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
            print(f"| {shape} | {tool} | {ms:.4f} | {2.0 * m * n * k / (ms * 1e-3) / 1e12:.1f} |")


if __name__ == "__main__":
    main()
