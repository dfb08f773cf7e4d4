#!/usr/bin/env python3
"""docs/attention.md's table: kjit's attention at each point of the FlashAttention-3 grid beside
the peers measured in the same GPU call, in TFLOP/s of the cold median.

    python3 scripts/attention_table.py DIR [--prefix NAME] [--peers DIR] [--plot PNG]

DIR holds peers.jsonl (bench/peers/attention_peers.py) and kjit's records grid_s<S>_d<D>_<full|causal>.json,
loose or in a .tgz archive (a GPU call packs its records so); --prefix reads another launch's
records of the same call (free_s…, three_s…) instead of grid_s…; --peers takes the peers from
another call's peers.jsonl (the page must then say that they ran apart). A point kjit did not verify is shown
as "fail"; a peer that did not run there as "–". The kjit column names the rung its records ran
("kjit wgmma"); --plot draws the same figures as bars, one group a point.
"""
import argparse
import json
import os
import re

from run_files import files_of

PEERS = [("flash", "FlashAttention-2"), ("cudnn", "cuDNN"), ("flex", "FlexAttention"), ("eager", "eager")]
def kjit_points(files, prefix):
    """{(S, head dim, causal): record} of kjit's records prefix_s<S>_d<D>_<full|causal>.json."""
    point = re.compile(prefix + r"_s(\d+)_d(\d+)_(full|causal)\.json$")
    points = {}
    for path, text in files.items():
        if match := point.match(os.path.basename(path)):
            record = json.loads(text)
            record = record[0] if isinstance(record, list) else record
            points[(int(match[1]), int(match[2]), match[3] == "causal")] = record
    return points


def peer_tflops(files, key="tflops"):
    """{(S, head dim, causal, tool): TFLOP/s} of the peers' lines without a modifier or documents
    (key "median_ms": their median times)."""
    lines = [json.loads(line) for line in files.get("peers.jsonl", "").splitlines() if line.strip()]
    plain = [p for p in lines if p.get(key) and p.get("modifier", "none") == "none" and not p.get("documents")]
    return {(p["seq"], p["head_dim"], p["causal"], p["tool"]): p[key] for p in plain}


def rung_of(points):
    """The rung kjit's records ran on ("wgmma"), or "mma / wgmma" where they differ."""
    rungs = sorted({r.get("policy_rung", "?") for r in points.values()})
    return " / ".join(rungs)


def point_title(seq, dim, causal):
    return f"{seq // 1024}k, {dim}{' causal' if causal else ''}"


def plot(rows, tools, path):
    """Bars of TFLOP/s: one group a point, one bar a tool (rows: [(title, [TFLOP/s or None])])."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = [t for t in range(len(tools)) if any(cells[t] for _, cells in rows)]  # tools that ran
    fig, ax = plt.subplots(figsize=(13, 4.5))
    width = 0.8 / len(shown)
    for n, t in enumerate(shown):
        values = [cells[t] or 0 for _, cells in rows]
        bars = ax.bar([i + n * width for i in range(len(rows))], values, width, label=tools[t])
        ax.bar_label(bars, labels=[f"{v:.0f}" if v else "" for v in values], fontsize=6)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(rows))], [title for title, _ in rows], rotation=30, fontsize=8)
    ax.set_ylabel("TFLOP/s (cold median)")
    ax.set_title("Attention forward on an H200, bfloat16, 16,384 tokens, heads × head dim = 2,048 (S, head dim)")
    ax.legend(ncol=len(shown), fontsize=8, loc="upper center")
    ax.set_ylim(0, 850)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir")
    parser.add_argument("--prefix", default="grid")
    parser.add_argument("--peers")
    parser.add_argument("--plot")
    args = parser.parse_args()
    files = files_of(args.dir)
    points, peers = kjit_points(files, args.prefix), peer_tflops(files_of(args.peers) if args.peers else files)
    if not points:
        raise SystemExit(f"attention_table: no {args.prefix}_s*_d*_*.json records in {args.dir}")
    mine_title = f"kjit {rung_of(points)}"
    print(f"| S, head dim | {mine_title} | " + " | ".join(title for _, title in PEERS) +
          " | kjit ÷ FlashAttention-2 | kjit ÷ cuDNN |")
    print("|---|---|" + "---|" * len(PEERS) + "---|---|")
    plotted = []
    for (seq, dim, causal) in sorted(points, key=lambda p: (-p[1], p[2], p[0])):
        record = points[(seq, dim, causal)]
        mine = record.get("tflops") if record.get("status") == "PASS" else None
        theirs = [peers.get((seq, dim, causal, tool)) for tool, _ in PEERS]
        ratios = [f"{mine / t:.2f}" if mine and t else "–" for t in (theirs[0], theirs[1])]
        cells = [f"{mine:.0f}" if mine else "fail"] + [f"{t:.0f}" if t is not None else "–" for t in theirs]
        print(f"| {point_title(seq, dim, causal)} | " + " | ".join(cells + ratios) + " |")
        plotted.append((point_title(seq, dim, causal), [mine] + theirs))
    if args.plot:
        plot(plotted, [mine_title] + [title for _, title in PEERS], args.plot)


if __name__ == "__main__":
    main()
