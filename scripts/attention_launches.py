#!/usr/bin/env python3
"""docs/attention.md's table of the wgmma rung's launches: TFLOP/s (cold median) of each launch's
records at a few points of the grid, full and causal, from one or more GPU calls' folders, with
cuDNN's, FlashAttention-2's and FlexAttention's from the same folders' peers (those that ran).

    python3 scripts/attention_launches.py DIR [DIR ...] --points S:D[,S:D...] --launch LABEL=PREFIX [...]

A launch's records are PREFIX_s<S>_d<D>_<full|causal>.json in any of the folders (as
attention_table.py reads them); a point it did not run, or did not verify, shows "–".
"""
import argparse

from attention_table import kjit_points, peer_tflops
from run_files import files_of


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dirs", nargs="+")
    parser.add_argument("--points", required=True)
    parser.add_argument("--launch", action="append", required=True)
    args = parser.parse_args()
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
        print(f"| {label} | " + " | ".join(f"{r['tflops']:.0f}" if r and r.get("status") == "PASS" else "–" for r in cells) + " |")
    peers = peer_tflops(files)
    for tool, title in (("cudnn", "cuDNN"), ("flash", "FlashAttention-2"), ("flex", "FlexAttention")):
        if any((*c, tool) in peers for c in columns):
            print(f"| {title}, the same call | " + " | ".join(f"{peers[(*c, tool)]:.0f}" if (*c, tool) in peers else "–" for c in columns) + " |")


if __name__ == "__main__":
    main()
