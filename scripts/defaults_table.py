#!/usr/bin/env python3
"""Issue 40's benchmark as a table: each case of bench/defaults/cases.json at kjit's defaults
against its peers measured in the same run (bench/defaults/run.py writes DIR):

    python3 scripts/defaults_table.py DIR [--plot PNG]

kjit: the median over rounds of each run's cold median (L2 flushed). GEMM: the case's peers (the
fastest of those named: cuBLAS alone, or an epilogue's cuBLASLt / eager kernels). Rows and
transposes: the fastest of PyTorch eager and torch.compile, and a same-size copy (x.clone()), whose
time over kjit's is the share of the copy's speed. The causal softmax also against kjit's own
unmasked softmax at its shape. DIR may hold defaults-data.tgz instead of the folders.
"""
import argparse
import io
import json
import os
import statistics
import tarfile

HERE = os.path.dirname(os.path.abspath(__file__))


def read_dir(out):
    """{relative path: text} of DIR, or of DIR/defaults-data.tgz."""
    files = {}
    packed = os.path.join(out, "defaults-data.tgz")
    if os.path.exists(packed):
        with tarfile.open(packed) as tar:
            for m in tar.getmembers():
                if m.isfile():
                    files[os.path.normpath(m.name)] = tar.extractfile(m).read().decode()
    for root, _, names in os.walk(out):
        for name in names:
            path = os.path.join(root, name)
            if name.endswith((".json", ".jsonl")):
                files.setdefault(os.path.relpath(path, out), open(path).read())
    return files


def peers_of(files, name):
    rows = []
    for line in files.get(name, "").splitlines():
        record = json.loads(line)
        if "median_ms" in record:
            rows.append(record)
    return rows


def kjit_ms(files, case):
    times = []
    for path, text in files.items():
        if os.path.dirname(path) == "defaults" and os.path.basename(path).startswith(case + "."):
            record = json.loads(text)[0]
            if record.get("status") == "PASS" and record.get("kernel_cold_median_ms"):
                times.append(record["kernel_cold_median_ms"])
    return statistics.median(times) if times else None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("dir")
    parser.add_argument("--plot", help="also draw each case's peer ÷ kjit as a bar chart")
    args = parser.parse_args()
    ratios = []  # (case, peer ÷ kjit) for the plot
    files = read_dir(args.dir)
    cases = json.load(open(os.path.join(HERE, "..", "bench", "defaults", "cases.json")))
    gemm_peers, row_peers, transpose_peers = (peers_of(files, n) for n in ("gemm_peers.jsonl", "row_peers.jsonl", "transpose_peers.jsonl"))
    us = lambda ms: f"{ms * 1000:.1f}" if ms else "-"
    print("| GEMM, M × N × K | kjit µs | peer µs (tool) | peer ÷ kjit | cuBLAS, product alone, µs | ÷ kjit |")
    print("|---|---|---|---|---|---|")
    for case in cases["gemm"]:
        mine = kjit_ms(files, case["case"])
        same = [p for p in gemm_peers if (p["m"], p["n"], p["k"]) == (case["m"], case["n"], case["k"])]
        peers = [(p["median_ms"], p["tool"]) for p in same if p["tool"] in case["peer"]]
        alone = [p["median_ms"] for p in same if p["tool"] == "cublas"]
        best = min(peers) if peers else None
        if not (best and mine and alone):
            print(f"| {case['case']} | {us(mine)} | - | - | - | - |")
            continue
        ratios.append((case["case"], best[0] / mine))
        print(f"| {case['case']} {case['m']}×{case['n']}×{case['k']} | {us(mine)} | {us(best[0])} ({best[1]}) | {best[0] / mine:.3f} | "
              f"{us(alone[0])} | {alone[0] / mine:.3f} |")
    print()
    print("| rows, transposes | kjit µs | fastest of eager, compile µs (tool) | peer ÷ kjit | copy µs | copy ÷ kjit |")
    print("|---|---|---|---|---|---|")
    unmasked = {}
    for case in cases["rows"]:
        mine = kjit_ms(files, case["case"])
        if case["op"] == "softmax":
            unmasked[(case["rows"], case["cols"])] = mine
        shape = lambda p: (p["rows"], p["cols"]) == (case["rows"], case["cols"])
        peers = [(p["median_ms"], p["tool"]) for p in row_peers if shape(p) and p["op"] == case["op"] and p["tool"] in ("torch_eager", "torch_compile")]
        copy = [p["median_ms"] for p in row_peers if shape(p) and p["tool"] == "copy"]
        best = min(peers) if peers else None
        if best and mine:
            ratios.append((case["case"], best[0] / mine))
        extra = ""
        if case["op"] == "causal_softmax" and unmasked.get((case["rows"], case["cols"])) and mine:
            extra = f"; unmasked kjit {us(unmasked[(case['rows'], case['cols'])])} µs"
        print(f"| {case['case']} {case['rows']}×{case['cols']} | {us(mine)} | {us(best[0]) if best else '-'} ({best[1] if best else ''}{extra}) | "
              f"{best[0] / mine:.3f} | {us(copy[0]) if copy else '-'} | {copy[0] / mine if copy and mine else 0:.3f} |" if best and mine else
              f"| {case['case']} | {us(mine)} | - | - | - | - |")
    for case in cases["transpose"]:
        mine = kjit_ms(files, case["case"])
        shape = lambda p: (p["rows"], p["cols"]) == (case["rows"], case["cols"])
        peers = [(p["median_ms"], p["tool"]) for p in transpose_peers if shape(p) and p["tool"] in ("torch_eager", "torch_compile")]
        copy = [p["median_ms"] for p in transpose_peers if shape(p) and p["tool"] == "copy"]
        best = min(peers) if peers else None
        if best and mine:
            ratios.append((case["case"], best[0] / mine))
        print(f"| {case['case']} | {us(mine)} | {us(best[0])} ({best[1]}) | {best[0] / mine:.3f} | {us(copy[0]) if copy else '-'} | "
              f"{copy[0] / mine if copy else 0:.3f} |" if best and mine else f"| {case['case']} | {us(mine)} | - | - | - | - |")
    if args.plot:
        plot(ratios, args.plot)


def plot(ratios, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(10, 4.5))
    names = [name for name, _ in ratios]
    values = [value for _, value in ratios]
    ax.bar(range(len(values)), values, color=["tab:green" if v >= 1 else "tab:orange" if v >= 0.9 else "tab:red" for v in values])
    ax.axhline(1, color="black", linewidth=0.8)
    ax.set_xticks(range(len(names)), names, rotation=60, ha="right", fontsize=8)
    ax.set_ylabel("best peer's time ÷ kjit's (above 1: kjit faster)")
    ax.set_title("kjit at its defaults on an H200, beside cuBLAS / PyTorch in the same run")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
