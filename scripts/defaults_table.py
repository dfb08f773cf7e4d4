#!/usr/bin/env python3
"""Issue 40's benchmark as a table: each case of bench/defaults/cases.json at kjit's defaults
against its peers measured in the same run (bench/defaults/run.py writes DIR):

    python3 scripts/defaults_table.py DIR [--cases FILE] [--only gemm|rows|transposes] [--plot PNG]

kjit: the median over rounds of each run's cold median (L2 flushed). GEMM: the case's peers (the
fastest of those named: cuBLAS alone, or an epilogue's cuBLASLt / eager kernels). Rows and
transposes: the fastest of PyTorch eager and torch.compile, and a same-size copy (x.clone()), whose
time over kjit's is the share of the copy's speed. The causal softmax also against kjit's own
unmasked softmax at its shape. DIR may hold its records packed in .tgz archives. FILE: the cases
run.py ran (bench/defaults/cases.json unless given).
"""
import argparse
import json
import os
import statistics

from run_files import files_of

HERE = os.path.dirname(os.path.abspath(__file__))


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


def us(ms):
    return f"{ms * 1000:.1f}" if ms else "-"


def gemm_table(files, cases, ratios):
    gemm_peers = peers_of(files, "gemm_peers.jsonl")
    lines = ["| GEMM, M × N × K | kjit µs | peer µs (tool) | peer ÷ kjit | cuBLAS, product alone, µs | ÷ kjit |",
             "|---|---|---|---|---|---|"]
    for case in cases["gemm"]:
        mine = kjit_ms(files, case["case"])
        same = [p for p in gemm_peers if (p["m"], p["n"], p["k"]) == (case["m"], case["n"], case["k"])]
        peers = [(p["median_ms"], p["tool"]) for p in same if p["tool"] in case["peer"]]
        alone = [p["median_ms"] for p in same if p["tool"] == "cublas"]
        best = min(peers) if peers else None
        name = f"{case.get('title', case['case'])} {case['m']}×{case['n']}×{case['k']}"
        if not (best and mine and alone):
            lines.append(f"| {name} | {us(mine)} | - | - | - | - |")
            continue
        ratios.append((case["case"], best[0] / mine))
        lines.append(f"| {name} | {us(mine)} | {us(best[0])} ({best[1]}) | {best[0] / mine:.3f} | "
                     f"{us(alone[0])} | {alone[0] / mine:.3f} |")
    return lines


def copy_table(title, files, cases, peers_file, ratios):
    """Rows or transposes: kjit against the fastest of eager and torch.compile, and a same-size copy;
    the causal softmax also against kjit's own unmasked softmax at its shape."""
    measured = peers_of(files, peers_file)
    lines = [f"| {title} | kjit µs | fastest of eager, compile µs (tool) | peer ÷ kjit | copy µs | copy ÷ kjit |",
             "|---|---|---|---|---|---|"]
    unmasked = {}
    for case in cases:
        mine = kjit_ms(files, case["case"])
        shape = (case["rows"], case["cols"])
        if case.get("op") == "softmax":
            unmasked[shape] = mine
        at_shape = [p for p in measured if (p["rows"], p["cols"]) == shape and ("op" not in case or p.get("op") == case["op"])]
        peers = [(p["median_ms"], p["tool"]) for p in at_shape if p["tool"] in ("torch_eager", "torch_compile")]
        copy = [p["median_ms"] for p in measured if (p["rows"], p["cols"]) == shape and p["tool"] == "copy"]
        best = min(peers) if peers else None
        name = f"{case.get('title', case['case'])} {case['rows']}×{case['cols']}"
        if not (best and mine):
            lines.append(f"| {name} | {us(mine)} | - | - | - | - |")
            continue
        ratios.append((case["case"], best[0] / mine))
        extra = f"; unmasked kjit {us(unmasked[shape])} µs" if case.get("op") == "causal_softmax" and unmasked.get(shape) else ""
        lines.append(f"| {name} | {us(mine)} | {us(best[0])} ({best[1]}{extra}) | {best[0] / mine:.3f} | "
                     f"{us(copy[0]) if copy else '-'} | {copy[0] / mine if copy else 0:.3f} |")
    return lines


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("dir")
    parser.add_argument("--cases", default=os.path.join(HERE, "..", "bench", "defaults", "cases.json"))
    parser.add_argument("--only", choices=("gemm", "rows", "transposes"), help="print this table alone")
    parser.add_argument("--plot", help="also draw each case's peer ÷ kjit as a bar chart")
    args = parser.parse_args()
    ratios = []  # (case, peer ÷ kjit) for the plot
    files = files_of(args.dir)
    cases = json.load(open(args.cases))
    tables = {
        "gemm": gemm_table(files, cases, ratios),
        "rows": copy_table("rows (bfloat16)", files, cases["rows"], "row_peers.jsonl", ratios),
        "transposes": copy_table("transpose (bfloat16)", files, cases["transpose"], "transpose_peers.jsonl", ratios),
    }
    print("\n\n".join("\n".join(lines) for name, lines in tables.items() if args.only in (None, name)))
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
