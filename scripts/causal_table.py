#!/usr/bin/env python3
"""The causal softmax's GPU figures as one table (scripts/gpu-check.sh causal writes them):

    python3 scripts/causal_table.py DIR

DIR holds causal_odd.json (the odd shapes: every point must PASS), causal_<config>_<round>.json
(kjit sweeps of causal_softmax and softmax at the same shapes, alternated) and
causal_peers.jsonl (bench/peers/row_peers.py). Prints per shape and dtype: kjit's causal and
unmasked cold medians (median over rounds), their ratio, and the peers' masked softmax.
"""
import collections
import gzip
import json
import pathlib
import statistics
import sys


def records(path):
    """A kjit --json file, or the same gzipped (as committed under bench/results)."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        return json.load(f)


def main():
    out = pathlib.Path(sys.argv[1])
    odd = records(next(out.glob("causal_odd.json*")))
    passed = sum(r["status"] == "PASS" for r in odd)
    print(f"odd shapes: {passed} of {len(odd)} points PASS")
    for r in odd:
        if r["status"] != "PASS":
            print(f"  not PASS: {r['sweep_point']}: {r['status']} {r.get('first_bad') or r.get('error', '')}")
    kjit = collections.defaultdict(list)  # (config, shape, dtype) → cold medians, one per round
    for path in sorted(out.glob("causal_*_[0-9].json*")):
        for r in records(path):
            if r["status"] == "PASS":
                kjit[(r["name"], r["shape"], r["dtype"])].append(r["kernel_cold_median_ms"])
    peers = collections.defaultdict(dict)  # (op, shape, dtype) → tool → median ms
    for line in (out / "causal_peers.jsonl").read_text().splitlines():
        p = json.loads(line)
        if "median_ms" in p:
            peers[(p["op"], f"{p['rows']}x{p['cols']}", p["dtype"])][p["tool"]] = p["median_ms"]
    print("\ncold medians in µs (kjit: median of rounds)")
    print(f"{'shape':<12}{'dtype':<10}{'causal':>9}{'softmax':>9}{'ratio':>8}"
          f"{'copy':>9}{'torch':>9}{'compile':>9}{'triton':>9}  (PyTorch and Triton: masked softmax)")
    for (name, shape, dtype), times in sorted(kjit.items()):
        if name != "causal_softmax":
            continue
        causal = statistics.median(times)
        plain = statistics.median(kjit.get(("softmax", shape, dtype), [float("nan")]))
        masked = peers.get(("causal_softmax", shape, dtype), {})
        copy = peers.get(("softmax", shape, dtype), {}).get("copy", float("nan"))
        cells = [1e3 * masked.get(tool, float("nan")) for tool in ("torch_eager", "torch_compile", "triton_row")]
        print(f"{shape:<12}{dtype:<10}{1e3 * causal:>9.1f}{1e3 * plain:>9.1f}{causal / plain:>8.3f}{1e3 * copy:>9.1f}"
              + "".join(f"{c:>9.1f}" for c in cells))


if __name__ == "__main__":
    main()
