#!/usr/bin/env python3
"""Every case of bench/defaults/cases.json at kjit's defaults, then the peers at the same shapes,
all in one run (issue 40's benchmark):

    python3 bench/defaults/run.py KJIT OUT [--cases FILE] [--rounds R] [--only CASE,…] [--no-peers]

Each case runs as `kjit run` of a shipped config with --set lines for its shape and stages, the
launch left to kjit, R rounds alternated case by case: OUT/defaults/CASE.ROUND.json. The peers:
bench/peers/gemm_peers.py, row_peers.py and transpose_peers.py, bfloat16, into OUT/*_peers.jsonl.
scripts/defaults_table.py makes the table. FILE is cases.json unless given: other_models.json
holds shapes of other public models, which no rule was measured on.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def kjit_args(kind, case):
    """The config and --set lines of a case."""
    if kind == "gemm":
        stages = [{"op": "matmul", "input": "x_in", "by": "W"}] + case["epilogue"]
        return "mlp_layer.json", {"shape": [case["m"], case["k"]], "inputs.W.shape": [case["k"], case["n"]], "stages": stages}
    if kind == "rows":
        return case["config"], {"shape": [case["rows"], case["cols"]]}
    return "transpose.json", {"shape": [case["rows"], case["cols"]]}


def kjit_command(kjit, verb, config, sets, extra):
    """`kjit VERB` of a shipped config in bfloat16, a --set line for each of `sets`, then `extra`."""
    command = [kjit, verb, os.path.join(ROOT, "configs", config), "--set", "dtype=bfloat16"]
    for key, value in sets.items():
        command += ["--set", f"{key}={json.dumps(value)}"]
    return command + extra


def logged(command, log, timeout):
    """`command` run with its output in `log`, after a line that names it; its exit status."""
    log.write("== " + " ".join(command) + "\n")
    log.flush()
    return subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, timeout=timeout).returncode


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("kjit")
    parser.add_argument("out")
    parser.add_argument("--cases", default=os.path.join(HERE, "cases.json"))
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--only", default="")
    parser.add_argument("--no-peers", action="store_true")
    args = parser.parse_args()
    cases = json.load(open(args.cases))
    only = set(filter(None, args.only.split(",")))
    os.makedirs(os.path.join(args.out, "defaults"), exist_ok=True)
    log = open(os.path.join(args.out, "defaults.log"), "a")
    for rnd in range(1, args.rounds + 1):
        for kind in ("gemm", "rows", "transpose"):
            for case in cases[kind]:
                if only and case["case"] not in only:
                    continue
                config, sets = kjit_args(kind, case)
                record = os.path.join(args.out, "defaults", f"{case['case']}.{rnd}.json")
                status = logged(kjit_command(args.kjit, "run", config, sets, ["--json", record]), log, 300)
                print(f"{case['case']} round {rnd}: exit {status}", flush=True)
    if args.no_peers:
        return
    peers = os.path.join(ROOT, "bench", "peers")
    gemm = ",".join(f"{c['m']}x{c['n']}x{c['k']}" for c in cases["gemm"] if not only or c["case"] in only)
    rows = ",".join(sorted({f"{c['rows']}x{c['cols']}" for c in cases["rows"] if not only or c["case"] in only}))
    transposes = ",".join(f"{c['rows']}x{c['cols']}" for c in cases["transpose"] if not only or c["case"] in only)
    # The tools the table compares with: each case's peers and cuBLAS's product alone.
    gemm_tools = ",".join(sorted({"cublas"}.union(*(c["peer"] for c in cases["gemm"]))))
    runs = [("gemm_peers.jsonl", ["gemm_peers.py", "--shapes", gemm, "--tools", gemm_tools, "--no-fp32"]),
            ("row_peers.jsonl", ["row_peers.py", "--shapes", rows, "--dtypes", "bfloat16"]),
            ("transpose_peers.jsonl", ["transpose_peers.py", "--shapes", transposes, "--dtypes", "bfloat16"])]
    for name, command in runs:
        if command[2] == "":
            continue
        with open(os.path.join(args.out, name), "w") as f:
            subprocess.run([sys.executable, os.path.join(peers, command[0])] + command[1:], stdout=f, stderr=log, cwd=peers)


if __name__ == "__main__":
    main()
