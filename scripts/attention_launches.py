#!/usr/bin/env python3
"""docs/attention.md's table of the wgmma rung's launches: TFLOP/s (cold median) of each launch's
records at a few points of the grid, full and causal, from one or more GPU calls' folders, with
cuDNN's, FlashAttention-2's and FlexAttention's from the same folders' peers (those that ran).

    python3 scripts/attention_launches.py DIR [DIR ...] --points S:D[,S:D...] --launch LABEL=PREFIX [...]

A launch's records are PREFIX_s<S>_d<D>_<full|causal>.json in any of the folders (as
attention_table.py reads them); a point it did not run, or did not verify, shows "–". With --ms,
milliseconds (cold median) instead, and eager PyTorch's among the peers: to compare orders that
count different FLOPs (fused and separate).
"""
import argparse

from attention_table import kjit_points, peer_tflops
from run_files import files_of


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dirs", nargs="+")
    parser.add_argument("--points", required=True)
    parser.add_argument("--launch", action="append", required=True)
    parser.add_argument("--ms", action="store_true", help="milliseconds, not TFLOP/s")
    args = parser.parse_args()
    key, shown = ("kernel_cold_median_ms", "{:.2f}") if args.ms else ("tflops", "{:.0f}")
    files = {}
    for folder in args.dirs:
        files.update(files_of(folder))
    points = [tuple(int(v) for v in p.split(":")) for p in args.points.split(",")]
    columns = [(seq, dim, causal) for seq, dim in points for causal in (False, True)]
    print("| launch | " + " | ".join(f"{s // 1024}k × {d}{' causal' if c else ''}" for s, d, c in columns) + " |")
    print("|---|" + "---|" * len(columns))
    for launch in args.launch:
        label, prefix = launch.split("=")
        records = kjit_points(files, prefix)
        cells = [records.get(c) for c in columns]
        print(f"| {label} | " + " | ".join(shown.format(r[key]) if r and r.get("status") == "PASS" else "–" for r in cells) + " |")
    peers = peer_tflops(files, "median_ms" if args.ms else "tflops")
    tools = (("cudnn", "cuDNN"), ("flash", "FlashAttention-2"), ("flex", "FlexAttention")) + ((("eager", "eager PyTorch"),) if args.ms else ())
    for tool, title in tools:
        if any((*c, tool) in peers for c in columns):
            print(f"| {title}, the same call | " + " | ".join(shown.format(peers[(*c, tool)]) if (*c, tool) in peers else "–" for c in columns) + " |")


if __name__ == "__main__":
    main()
