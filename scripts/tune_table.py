#!/usr/bin/env python3
"""Issue 25's table from scripts/gpu-check.sh tune-table: for each (op, dtype, shape), the default
launch's cold time beside the exhaustive best of the family's launch space, and the best point.

usage: scripts/tune_table.py DIR   (DIR holds LABEL.tune.json and LABEL.default.json)"""
import json
import pathlib
import sys


def main(folder):
    folder = pathlib.Path(folder)
    print("| op · dtype · shape | default | exhaustive best | default / best | points | best point |")
    print("|---|---|---|---|---|---|")
    for tuned in sorted(folder.glob("*.tune.json")):
        label = tuned.name[: -len(".tune.json")]
        rows = json.loads(tuned.read_text())
        passed = [r for r in rows if r.get("ms") is not None]
        best = min(passed, key=lambda r: r["ms"]) if passed else None
        default_file = folder / f"{label}.default.json"
        default = None
        if default_file.exists():
            records = json.loads(default_file.read_text())
            if records and records[0].get("status") == "PASS":
                default = records[0].get("kernel_cold_median_ms")
        ratio = f"{best['ms'] / default:.3f}" if best and default else "–"
        shown = lambda ms: f"{ms * 1000:.1f} µs" if ms else "refused"
        print(f"| {label} | {shown(default)} | {shown(best['ms']) if best else '–'} | {ratio} | {len(passed)} of {len(rows)} | "
              f"{best['point'] if best else '–'} |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
