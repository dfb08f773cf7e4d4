#!/usr/bin/env python3
"""A matrix transpose as PyTorch users write it, and a same-size copy (its roofline), timed as
kjit times its kernels (row_peers.time_cold: L2 flushed before each call, CUDA events around one
call, median of K). One JSON object per line, as row_peers.py prints.

    python3 bench/peers/transpose_peers.py [--repeat K] [--shapes 4096x4096,8192x8192,16384x16384]

Tools: copy (x.clone(): one read + one write), torch_eager (x.t().contiguous()), torch_compile
(the same through torch.compile).
"""
import argparse
import json

import torch

from row_peers import time_cold


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--shapes", default="4096x4096,8192x8192,16384x16384")
    parser.add_argument("--dtypes", default="float32,bfloat16,float64")
    args = parser.parse_args()
    compiled = torch.compile(lambda t: t.t().contiguous())
    tools = {"copy": lambda x: x.clone(), "torch_eager": lambda x: x.t().contiguous(), "torch_compile": compiled}
    for shape in args.shapes.split(","):
        rows, cols = (int(v) for v in shape.split("x"))
        for dtype in args.dtypes.split(","):
            x = torch.rand(rows, cols, device="cuda", dtype=getattr(torch, dtype))
            for tool, f in tools.items():
                median, p10, p90 = time_cold(f, x, args.repeat)
                print(json.dumps({"op": "transpose", "tool": tool, "dtype": dtype, "rows": rows, "cols": cols,
                                  "median_ms": median, "p10_ms": p10, "p90_ms": p90}), flush=True)
            del x


if __name__ == "__main__":
    main()
