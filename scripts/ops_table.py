#!/usr/bin/env python3
"""Markdown table of a `kjit sweep configs/activations.json --json FILE` result: per stage (activation
and formula) and storage type, the max error in ulps, the max absolute error, and the cold kernel
time. Usage: scripts/ops_table.py FILE.json > table.md"""
import json
import sys

DTYPES = ["float32", "float16", "bfloat16", "float64"]


def main(path):
    rows = {}
    for record in json.load(open(path)):
        rows.setdefault(record["stages"], {})[record["dtype"]] = record
    print("| activation=formula | " + " | ".join(DTYPES) + " |")
    print("|---|" + "---|" * len(DTYPES))
    for stage, by_dtype in rows.items():
        cells = []
        for dtype in DTYPES:
            r = by_dtype.get(dtype)
            if r is None or r["kernel_cold_median_ms"] is None:
                cells.append("–")
                continue
            mark = "" if r["status"] == "PASS" else f" **{r['status']}**"
            cells.append(f"{r['max_ulp_error']:.3g} ulp, {r['max_abs_error']:.2g}, "
                         f"{r['kernel_cold_median_ms'] * 1e3:.1f} µs{mark}")
        print(f"| {stage} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1])
