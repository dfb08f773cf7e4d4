#!/usr/bin/env python3
"""docs/attention.md's table: kjit's attention at each point of the FlashAttention-3 grid beside
the peers measured in the same GPU call, in TFLOP/s of the cold median.

    python3 scripts/attention_table.py DIR

DIR holds peers.jsonl (bench/peers/attention_peers.py) and kjit's records grid_s<S>_d<D>_<full|causal>.json,
loose or in a .tgz archive (a GPU call packs its records so). A point kjit did not verify is shown
as "fail"; a peer that did not run there as "–".
"""
import argparse
import json
import os
import re

from run_files import files_of

PEERS = [("flash", "FlashAttention-2"), ("cudnn", "cuDNN"), ("flex", "FlexAttention"), ("eager", "eager")]
POINT = re.compile(r"grid_s(\d+)_d(\d+)_(full|causal)\.json$")


def kjit_points(files):
    """{(S, head dim, causal): record} of kjit's grid records."""
    points = {}
    for path, text in files.items():
        if match := POINT.match(os.path.basename(path)):
            record = json.loads(text)
            record = record[0] if isinstance(record, list) else record
            points[(int(match[1]), int(match[2]), match[3] == "causal")] = record
    return points


def peer_tflops(files):
    """{(S, head dim, causal, tool): TFLOP/s} of the peers' lines."""
    lines = [json.loads(line) for line in files.get("peers.jsonl", "").splitlines() if line.strip()]
    return {(p["seq"], p["head_dim"], p["causal"], p["tool"]): p["tflops"] for p in lines if "tflops" in p}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir")
    args = parser.parse_args()
    files = files_of(args.dir)
    points, peers = kjit_points(files), peer_tflops(files)
    if not points:
        raise SystemExit(f"attention_table: no grid_s*_d*_*.json records in {args.dir}")
    print("| S, head dim | kjit mma | " + " | ".join(title for _, title in PEERS) + " | kjit ÷ FlashAttention-2 |")
    print("|---|---|" + "---|" * len(PEERS) + "---|")
    for (seq, dim, causal) in sorted(points, key=lambda p: (-p[1], p[2], p[0])):
        record = points[(seq, dim, causal)]
        mine = record.get("tflops") if record.get("status") == "PASS" else None
        theirs = [peers.get((seq, dim, causal, tool)) for tool, _ in PEERS]
        ratio = f"{mine / theirs[0]:.2f}" if mine and theirs[0] else "–"
        cells = [f"{mine:.0f}" if mine else "fail"] + [f"{t:.0f}" if t is not None else "–" for t in theirs]
        print(f"| {seq // 1024}k, {dim}{' causal' if causal else ''} | " + " | ".join(cells) + f" | {ratio} |")


if __name__ == "__main__":
    main()
