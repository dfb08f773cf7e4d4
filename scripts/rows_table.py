#!/usr/bin/env python3
"""The row-reduction results of one GPU call (scripts/gpu-check.sh rows), as tables: the odd-shape
checks, then each op at each shape and dtype — kjit fused and separate beside PyTorch and Triton,
cold medians in µs, and kjit's share of its measured copy ceiling.

    python3 scripts/rows_table.py DIR     (DIR holds rows_*.json and row_peers.jsonl)
"""
import glob
import json
import os
import sys


def records(path):
    data = json.load(open(path))
    return data if isinstance(data, list) else data["records"]


def main(folder):
    print("odd shapes (rows 1, 3, 1000 x cols 1, 33, 4097; every dtype; fused and separate):")
    for path in sorted(glob.glob(os.path.join(folder, "rows_odd_*.json"))):
        rs = records(path)
        bad = [r for r in rs if r["status"] != "PASS"]
        print(f"  {os.path.basename(path)[9:-5]:10} {len(rs) - len(bad)} of {len(rs)} pass")
        for r in bad:
            print(f"    {r['status']}: {r['sweep_point']}: {r['first_bad'] or r['error']}")
    peers = {}
    peers_path = os.path.join(folder, "row_peers.jsonl")
    if os.path.exists(peers_path):
        for line in open(peers_path):
            p = json.loads(line)
            peers[(p["op"], p["tool"], p["dtype"], f"{p['rows']}x{p['cols']}")] = p.get("median_ms")
    tools = ("copy", "torch_eager", "torch_compile", "triton_row", "unfused_eager")
    for op, path in (("softmax", "rows_softmax.json"), ("layernorm", "rows_layernorm.json"), ("rmsnorm", "rows_rmsnorm.json")):
        if not os.path.exists(os.path.join(folder, path)):
            continue
        rs = records(os.path.join(folder, path))
        print(f"\n{op}: cold median µs (L2 flushed, CUDA events); kjit's % of its copy ceiling; fused vs each")
        print(f"  {'shape':12} {'dtype':9} {'fused':>8} {'% ceil':>6} {'separate':>9} {'sep/fused':>9} "
              + " ".join(f"{t:>13}" for t in tools) + "  check")
        # Where a sweep also varies the formula (softmax's last step) or the row cache, each
        # fusion's fastest point; the fused one's choices are listed after the table.
        keys = sorted({(r["shape"], r["dtype"]) for r in rs}, key=lambda k: (k[1], k[0]))
        for shape, dtype in keys:
            by = {}
            for r in sorted((r for r in rs if r["shape"] == shape and r["dtype"] == dtype),
                            key=lambda r: -r["kernel_cold_median_ms"]):
                by[r["fusion"]] = r
            fused, separate = by.get("fused"), by.get("separate")
            us = lambda r: r["kernel_cold_median_ms"] * 1e3 if r and r.get("kernel_cold_median_ms") else float("nan")
            f = us(fused)
            cells = []
            for t in tools:
                ms = peers.get((op, t, dtype, shape))
                cells.append(f"{ms * 1e3:8.1f} {ms * 1e3 / f:4.2f}x" if ms else f"{'-':>13}")
            pct = fused.get("percent_of_ceiling") if fused else None
            checks = "/".join(r["status"] for r in by.values())
            print(f"  {shape:12} {dtype:9} {f:8.1f} {pct or float('nan'):6.1f} {us(separate):9.1f} {us(separate) / f:9.2f} "
                  + " ".join(cells) + f"  {checks}  {fused['sweep_point'] if fused else ''}")


def clusters(folder):
    path = os.path.join(folder, "rows_cluster.json")
    if not os.path.exists(path):
        return
    print("\nsoftmax 1024 x 32768 by launch: block x cluster, registers, blocks per SM, cold median µs, % of ceiling")
    for r in records(path):
        print(f"  {r['dtype']:9} block {r['block']:5} {r['sweep_point'].split()[-1]:17} {r['registers']:>4} regs "
              f"{r['blocks_per_sm']:3} /SM {r['kernel_cold_median_ms'] * 1e3:8.1f} {r['percent_of_ceiling'] or 0:6.1f} %  {r['status']}")


if __name__ == "__main__":
    main(sys.argv[1])
    clusters(sys.argv[1])
