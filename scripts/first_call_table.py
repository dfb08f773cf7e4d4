#!/usr/bin/env python3
"""`kjit first-call --json` rows as docs/first-call.md's table: per start state, the median of its
fresh processes (min..max of the process wall) and of each phase a first call pays.

    python3 scripts/first_call_table.py DIR

DIR holds first_call.json, or a .tgz archive with it (a GPU call packs its records so).
"""
import argparse
import json
import os
import statistics

from run_files import files_of

STATES = [  # (first-call's state, as the table names it)
    ("cold", "cold: empty kjit cache"),
    ("warm-ptx-nocache", "warm PTX, driver JIT cache off"),
    ("warm-ptx-cached", "warm PTX, driver JIT cache on"),
    ("warm-cubin", "warm cubin"),
    ("second-call", "second call, same process"),
]
PHASES = ["driver_init_ms", "context_ms", "nvrtc_ms", "ptx_to_cubin_ms", "module_load_ms", "first_launch_ms"]


def rows_in(folder):
    for path, text in files_of(folder).items():
        if os.path.basename(path) == "first_call.json":
            return json.loads(text)
    raise SystemExit(f"first_call_table: no first_call.json in {folder} or its .tgz archives")


def shown(ms):
    """Three significant digits, in ms from 1 ms up, else in µs."""
    if ms is None:
        return "–"
    value, unit = (ms, "ms") if ms >= 1 else (ms * 1000, "µs")
    return f"{value:.3g} {unit}" if value < 1000 else f"{value:.0f} {unit}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir")
    args = parser.parse_args()
    rows = rows_in(args.dir)
    print("| state | process wall (min..max) | CUDA init | context | NVRTC | PTX → cubin | module load | first launch |")
    print("|---|---|---|---|---|---|---|---|")
    for state, title in STATES:
        mine = [r for r in rows if r.get("first_call_state") == state]
        if not mine:
            continue
        median = lambda column: statistics.median(v) if (v := [r[column] for r in mine if r.get(column) is not None]) else None
        walls = [r["process_wall_ms"] for r in mine if r.get("process_wall_ms")]
        wall = f"{shown(statistics.median(walls))} ({min(walls):.0f}..{max(walls):.0f})" if walls else "–"
        print(f"| {title} | {wall} | " + " | ".join(shown(median(c)) for c in PHASES) + " |")


if __name__ == "__main__":
    main()
