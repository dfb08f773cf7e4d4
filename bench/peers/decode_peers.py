#!/usr/bin/env python3
"""Attention at decode shapes as PyTorch users run it: one query a head (the token being
generated) against a long cache of keys and values, grouped-query heads, bf16. Timed as kjit
times its kernels (L2 flushed before each call, CUDA events, median of K). Decode moves bytes, not
FLOPs: each row reports the GB/s of Q, K, V read and O written, and beside them a same-size copy
of K and V (torch's clone) in the same run, the roofline a decode kernel can reach. One JSON
object per line: {"op", "tool", "batch", "heads", "kv_heads", "queries", "keys", "head_dim",
"median_ms", "p10_ms", "p90_ms", "gb_per_s"}.

    python3 bench/peers/decode_peers.py [--repeat K] [--points B:H:KV:KEYS:D,...] [--tools cudnn,flash,efficient,copy]
"""
import argparse

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from row_peers import print_timed

BACKENDS = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION,
            "efficient": SDPBackend.EFFICIENT_ATTENTION}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--points", default="1:32:8:8192:128,1:32:8:32768:128,8:32:8:8192:128,32:32:8:4096:128")
    parser.add_argument("--tools", default="cudnn,flash,efficient,copy")
    args = parser.parse_args()
    for point in args.points.split(","):
        batch, heads, kv_heads, keys, dim = (int(v) for v in point.split(":"))
        q = torch.randn(batch, heads, 1, dim, device="cuda", dtype=torch.bfloat16)
        k, v = (torch.randn(batch, kv_heads, keys, dim, device="cuda", dtype=torch.bfloat16) for _ in range(2))
        moved = 2 * (2 * q.numel() + k.numel() + v.numel())
        row = {"op": "decode", "dtype": "bfloat16", "batch": batch, "heads": heads, "kv_heads": kv_heads, "queries": 1,
               "keys": keys, "head_dim": dim}
        for tool in args.tools.split(","):
            if tool == "copy":
                def call(_):  # K and V read and written once each: the bytes of the cache, twice
                    return k.clone(), v.clone()
                bytes_timed = 2 * 2 * (k.numel() + v.numel())
            elif tool in BACKENDS:
                def call(_, backend=BACKENDS[tool]):
                    with sdpa_kernel(backend):
                        return torch.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=kv_heads != heads)
                bytes_timed = moved
            else:
                raise SystemExit(f"unknown tool {tool!r}")
            print_timed(call, {**row, "tool": tool}, args.repeat,
                        lambda median, moved=bytes_timed: {"gb_per_s": moved / (median * 1e-3) / 1e9})


if __name__ == "__main__":
    main()
