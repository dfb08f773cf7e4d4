#!/usr/bin/env python3
"""The transpose against a same-size copy and PyTorch, from one gpu-check `transpose` folder:
for each dtype and shape, x.clone(), x.t().contiguous() and torch.compile's, and kjit's fastest
points (cold medians, µs, and % of the copy's time).

    scripts/transpose_table.py bench/results/2026-12-01-h200-families/call4 [--best 3]
"""
import argparse
import gzip
import json
from pathlib import Path


def records(folder):
    for path in sorted([*Path(folder).glob("transpose*.json"), *Path(folder).glob("transpose*.json.gz")]):
        if "odd" in path.name or "maps" in path.name:
            continue  # verification at odd shapes, not timed against peers
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt") as f:
            data = json.load(f)
        yield from data if isinstance(data, list) else data["records"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("folder")
    parser.add_argument("--best", type=int, default=3)
    args = parser.parse_args()
    peers = {}
    for line in open(Path(args.folder) / "transpose_peers.jsonl"):
        r = json.loads(line)
        peers[(r["tool"], r["dtype"], f'{r["rows"]}x{r["cols"]}')] = r["median_ms"] * 1e3
    points = {}
    for r in records(args.folder):
        if r["status"] == "PASS":
            # Records of schema 1.4.0 named the policy's columns launch_<key> before it was released.
            policy = lambda key: r.get("policy_" + key, r.get("launch_" + key))
            layout = policy("layout") or "padded"  # no layout column before 2026-12-02: padded
            label = (f'vec {policy("vector_width")}, tile {policy("tile")}, block {policy("block")}, {layout}' +
                     (f' {policy("padding")}' if layout == "padded" else ""))
            points.setdefault((r["dtype"], r["shape"]), []).append((r["kernel_cold_median_ms"] * 1e3, label))
    print("| dtype | shape | copy µs | x.t().contiguous() | torch.compile | kjit, fastest points |")
    print("|---|---|---|---|---|---|")
    for (dtype, shape), found in sorted(points.items()):
        copy = peers.get(("copy", dtype, shape))
        if copy is None:
            continue  # a dtype the peers did not time
        share = lambda t: f"{t:.1f} ({100 * copy / t:.1f} %)"
        best = "; ".join(f"{share(t)} {label}" for t, label in sorted(found)[: args.best])
        print(f"| {dtype} | {shape} | {copy:.1f} | {share(peers[('torch_eager', dtype, shape)])} | "
              f"{share(peers[('torch_compile', dtype, shape)])} | {best} |")


if __name__ == "__main__":
    main()
