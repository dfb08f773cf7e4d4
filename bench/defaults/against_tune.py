#!/usr/bin/env python3
"""Issue 40's third figure: each case of bench/defaults/cases.json at kjit's defaults against the
best launch `kjit tune` finds at the same shape, in one run:

    python3 bench/defaults/against_tune.py KJIT OUT [--cases FILE] [--only CASE,…]
                                           [--strategy exhaustive] [--rounds R]

For each case, `kjit tune` searches its family's launches (OUT/tunes/CASE.json); then the
default and `"launch": "tuned"` (the tune's best point, from the tuning database the tune just
wrote) run R rounds alternated (OUT/against_tune/CASE.{default,tuned}.ROUND.json). It prints a
table of the two cold medians (the median of the rounds' medians) and the default's time over
the tuned one; a default more than 5 % slower is marked. KJIT_CACHE_DIR should name a cache of
this run's own, so that "tuned" finds this run's tunes.
"""
import argparse
import json
import os
import statistics
import sys

from run import kjit_args, kjit_command, logged

THRESHOLD = 1.05  # issue 40: the defaults within 5 % of the tune's best


def run_case(args, log, kind, case):
    """The case's tune, then its default and tuned runs, alternated."""
    config, sets = kjit_args(kind, case)
    name = case["case"]
    steps = [("tune", sets, ["--strategy", args.strategy, "--json", os.path.join(args.out, "tunes", f"{name}.json")])]
    for rnd in range(1, args.rounds + 1):
        for launch, launch_sets in (("default", sets), ("tuned", {**sets, "launch": "tuned"})):
            steps.append(("run", launch_sets, ["--json", os.path.join(args.out, "against_tune", f"{name}.{launch}.{rnd}.json")]))
    for verb, step_sets, extra in steps:
        status = logged(kjit_command(args.kjit, verb, config, step_sets, extra), log, 600)
        print(f"{name} {verb}: exit {status}", flush=True)


def cold_us(out, name, launch):
    """The median of the rounds' cold medians, in µs, and the last record (None where none ran)."""
    folder = os.path.join(out, "against_tune")
    times, last = [], None
    for file in sorted(f for f in os.listdir(folder) if f.startswith(f"{name}.{launch}.")):
        record = json.load(open(os.path.join(folder, file)))
        record = record[0] if isinstance(record, list) else record
        if record.get("status") == "PASS" and record.get("kernel_cold_median_ms"):
            times.append(1000 * record["kernel_cold_median_ms"])
            last = record
    return (statistics.median(times), last) if times else (None, None)


def table(out, names):
    lines = ["| case | default µs | tuned µs | default ÷ tuned | the tune's launch |", "|---|---|---|---|---|"]
    for name in names:
        default, _ = cold_us(out, name, "default")
        tuned, record = cold_us(out, name, "tuned")
        if default is None or tuned is None:
            lines.append(f"| {name} | {'–' if default is None else f'{default:.1f}'} | "
                         f"{'–' if tuned is None else f'{tuned:.1f}'} | not measured | |")
            continue
        ratio = default / tuned
        mark = f" (over {THRESHOLD})" if ratio > THRESHOLD else ""
        lines.append(f"| {name} | {default:.1f} | {tuned:.1f} | {ratio:.3f}{mark} | {record.get('tuned_launch') or record.get('variant')} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("kjit")
    parser.add_argument("out")
    parser.add_argument("--cases", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "cases.json"))
    parser.add_argument("--only", default="")
    parser.add_argument("--strategy", default="exhaustive")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    cases = json.load(open(args.cases))
    only = set(filter(None, args.only.split(",")))
    for folder in ("tunes", "against_tune"):
        os.makedirs(os.path.join(args.out, folder), exist_ok=True)
    names = []
    with open(os.path.join(args.out, "against_tune.log"), "a") as log:
        for kind in ("gemm", "rows", "transpose"):
            for case in cases[kind]:
                if not only or case["case"] in only:
                    run_case(args, log, kind, case)
                    names.append(case["case"])
    print(table(args.out, names))


if __name__ == "__main__":
    sys.exit(main())
