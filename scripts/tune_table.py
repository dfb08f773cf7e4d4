#!/usr/bin/env python3
"""Issue 25's table, from scripts/gpu-check.sh.

  tune_table.py DIR               tune-table: each cell's default launch (LABEL.default.json) beside
                                  the exhaustive best of its launch space (LABEL.tune.json)
  tune_table.py --auto DIR        tune-auto: the default (LABEL.default.K.json) against the best
                                  point run again (LABEL.best.K.json), medians of the rounds
  tune_table.py --best-sets FILE  the best point of a `kjit tune --json` file (.gz too) as
                                  --set arguments, one per line"""
import gzip
import json
import pathlib
import statistics
import sys


def load(path):
    path = pathlib.Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        return json.load(f)


def best_of(rows):
    passed = [r for r in rows if r.get("ms") is not None]
    return min(passed, key=lambda r: r["ms"]) if passed else None


def cold_ms(path):
    records = load(path)
    if records and records[0].get("status") == "PASS":
        return records[0].get("kernel_cold_median_ms")
    return None


def shown(ms):
    return f"{ms * 1000:.1f} µs" if ms else "refused"


def table(folder):
    print("| op · dtype · shape | default | exhaustive best | best / default | points | best point |")
    print("|---|---|---|---|---|---|")
    for tuned in sorted(folder.glob("*.tune.json")):
        label = tuned.name[: -len(".tune.json")]
        rows = load(tuned)
        best = best_of(rows)
        default_file = folder / f"{label}.default.json"
        default = cold_ms(default_file) if default_file.exists() else None
        ratio = f"{best['ms'] / default:.3f}" if best and default else "–"
        passed = sum(r.get("ms") is not None for r in rows)
        print(f"| {label} | {shown(default)} | {shown(best['ms']) if best else '–'} | {ratio} | {passed} of {len(rows)} | "
              f"{best['point'] if best else '–'} |")


def auto(folder):
    print("| op · dtype · shape | default (median of rounds) | best point, same run | best / default | default's launch |")
    print("|---|---|---|---|---|")
    labels = sorted({p.name.split(".")[0] for p in folder.glob("*.default.*.json")})
    for label in labels:
        medians = {}
        for which in ("default", "best"):
            times = [cold_ms(p) for p in sorted(folder.glob(f"{label}.{which}.*.json"))]
            times = [t for t in times if t]
            medians[which] = statistics.median(times) if times else None
        policy = ""
        first = sorted(folder.glob(f"{label}.default.*.json"))
        if first:
            record = load(first[0])[0]
            policy = " ".join(f"{k[7:]}={record[k]}" for k in ("policy_row_cache", "policy_block", "policy_streaming")
                              if k in record)
        d, b = medians["default"], medians["best"]
        ratio = f"{b / d:.3f}" if d and b else "–"
        print(f"| {label} | {shown(d)} | {shown(b)} | {ratio} | {policy} |")


def best_sets(path):
    best = best_of(load(path))
    for key, value in best["values"].items():
        print("--set")
        print(f"{key}={json.dumps(value)}")


if __name__ == "__main__":
    if len(sys.argv) == 2:
        table(pathlib.Path(sys.argv[1]))
    elif len(sys.argv) == 3 and sys.argv[1] == "--auto":
        auto(pathlib.Path(sys.argv[2]))
    elif len(sys.argv) == 3 and sys.argv[1] == "--best-sets":
        best_sets(sys.argv[2])
    else:
        sys.exit(__doc__)
