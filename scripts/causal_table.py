#!/usr/bin/env python3
"""The causal softmax's GPU figures as one table (scripts/gpu-check.sh causal writes them):

    python3 scripts/causal_table.py DIR

DIR holds causal_odd.json (the odd shapes: every point must PASS), causal_<config>_<round>.json
(kjit sweeps of causal_softmax and softmax at the same shapes, alternated) and
causal_peers.jsonl (bench/peers/row_peers.py). Prints per shape and dtype: kjit's causal and
unmasked cold medians (median over rounds), their ratio, and the peers' masked softmax.
"""
import collections
import fnmatch
import json
import os
import statistics
import sys

from run_files import files_of


def records_of(files, pattern):
    """Every record of the files whose name matches pattern, in name order."""
    return [r for name in sorted(files) if fnmatch.fnmatch(os.path.basename(name), pattern) for r in json.loads(files[name])]


def rounds(files):
    """{(config, shape, dtype): [cold median ms of each round]} of kjit's points that passed."""
    kjit = collections.defaultdict(list)
    for r in records_of(files, "causal_*_[0-9].json"):
        if r["status"] == "PASS":
            kjit[(r["name"], r["shape"], r["dtype"])].append(r["kernel_cold_median_ms"])
    return kjit


def ratio(kjit, shape, dtype):
    """The causal softmax's median over rounds ÷ the unmasked softmax's."""
    plain = kjit.get(("softmax", shape, dtype))
    causal = kjit.get(("causal_softmax", shape, dtype))
    return statistics.median(causal) / statistics.median(plain) if causal and plain else float("nan")


def markdown(files):
    """The ratios as docs/tuning.md shows them: a row per dtype, a column per shape."""
    kjit = rounds(files)
    shapes = sorted({shape for _, shape, _ in kjit}, key=lambda s: [int(v) for v in s.split("x")])
    title = lambda s: f"{s.split('x')[0]}²" if len(set(s.split("x"))) == 1 else s.replace("x", " × ")
    print("| causal / unmasked, auto | " + " | ".join(title(s) for s in shapes) + " |")
    print("|---" * (len(shapes) + 1) + "|")
    for dtype in ("float32", "bfloat16", "float16", "float64"):
        if any(d == dtype for _, _, d in kjit):
            print(f"| {dtype} | " + " | ".join(f"{ratio(kjit, s, dtype):.3f}" for s in shapes) + " |")


def main():
    if len(sys.argv) == 3 and sys.argv[2] == "--markdown":
        return markdown(files_of(sys.argv[1]))
    files = files_of(sys.argv[1])
    odd = records_of(files, "causal_odd.json")
    passed = sum(r["status"] == "PASS" for r in odd)
    print(f"odd shapes: {passed} of {len(odd)} points PASS")
    for r in odd:
        if r["status"] != "PASS":
            print(f"  not PASS: {r['sweep_point']}: {r['status']} {r.get('first_bad') or r.get('error', '')}")
    kjit = rounds(files)  # (config, shape, dtype) → cold medians, one per round
    peers = collections.defaultdict(dict)  # (op, shape, dtype) → tool → median ms
    for line in files.get("causal_peers.jsonl", "").splitlines():
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
        print(f"{shape:<12}{dtype:<10}{1e3 * causal:>9.1f}{1e3 * plain:>9.1f}{ratio(kjit, shape, dtype):>8.3f}{1e3 * copy:>9.1f}"
              + "".join(f"{c:>9.1f}" for c in cells))


if __name__ == "__main__":
    main()
