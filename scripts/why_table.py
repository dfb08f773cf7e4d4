#!/usr/bin/env python3
"""docs/why.md's table of every shipped config counted: `kjit run CONFIG --metrics` records
(logs/m_CONFIG.json) of one GPU call, the memory columns from another where its counter pass
changed (--memory).

    python3 scripts/why_table.py DIR [--memory DIR2]
    python3 scripts/why_table.py DIR --noise

--noise: the cold medians without and with the counter pass, alternated (n_CONFIG_off_K.json,
n_CONFIG_on_K.json), each round's.

Columns: the cold median; the bytes kjit's model says the pass moves; the DRAM bytes counted over
those; DRAM busy; L2 hit rate; achieved occupancy; the tensor pipe; the top stall (cycles per
issued instruction).
"""
import argparse
import json
import os
import re

from run_files import files_of

RECORD = re.compile(r"^m_(\w+)\.json$")
NOISE = re.compile(r"^n_(\w+)_(on|off)_(\d+)\.json$")


def records(folder, pattern=RECORD):
    """{the name's groups: its first record} of the call's files whose name matches pattern."""
    found = {}
    for path, text in files_of(folder).items():
        if match := pattern.search(os.path.basename(path)):
            r = json.loads(text)
            found[match.groups() if pattern.groups > 1 else match[1]] = r[0] if isinstance(r, list) else r
    if not found:
        raise SystemExit(f"why_table: no {pattern.pattern} records in {folder} or its archives")
    return found


def noise(folder):
    runs = records(folder, NOISE)
    print("| config | without (µs) | with (µs) |")
    print("|---|---|---|")
    for name in sorted({name for name, _, _ in runs}):
        cells = [", ".join(f"{r['kernel_cold_median_ms'] * 1e3:.2f}" for (n, mode, _), r in sorted(runs.items()) if n == name and mode == wanted)
                 for wanted in ("off", "on")]
        print(f"| {name} | {cells[0]} | {cells[1]} |")


def top_stall(r):
    stalls = {k[len("metric_stall_"):]: v for k, v in r.items() if k.startswith("metric_stall_") and v is not None}
    reason = max(stalls, key=stalls.get, default=None)
    return f"{reason} {stalls[reason]:.1f}" if reason else "–"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir")
    parser.add_argument("--memory", help="the call whose DRAM and L2 columns to show")
    parser.add_argument("--noise", action="store_true", help="the timed figures without and with the counter pass")
    args = parser.parse_args()
    if args.noise:
        return noise(args.dir)
    counted = records(args.dir)
    memory = records(args.memory) if args.memory else counted
    print("| config | µs | model MiB | DRAM / model | DRAM % | L2 hit % | occupancy % | tensor % | top stall |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in sorted(counted):
        r, m = counted[name], memory.get(name, {})
        dram = (m.get("metric_dram_read_bytes") or 0) + (m.get("metric_dram_write_bytes") or 0)
        ratio = f"{dram / m['bytes_moved']:.2f}" if dram and m.get("bytes_moved") else "–"
        cell = lambda record, key: f"{record[key]:.0f}" if record.get(key) is not None else "–"
        print(f"| {name} | {r['kernel_cold_median_ms'] * 1e3:.1f} | {r['bytes_moved'] / 2**20:.0f} | {ratio} | "
              f"{cell(m, 'metric_dram_throughput_pct')} | {cell(m, 'metric_l2_hit_rate_pct')} | "
              f"{cell(r, 'metric_achieved_occupancy_pct')} | {cell(r, 'metric_tensor_pipe_pct')} | {top_stall(r)} |")


if __name__ == "__main__":
    main()
