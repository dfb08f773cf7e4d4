#!/usr/bin/env python3
"""kjit beside the tools people use, on the same hidden layer, each in fresh processes.

    python3 bench/compare.py [--kjit build/kjit] [--n 1000000 16777216] [--out DIR]

For each n, runs `kjit run` and every peer of bench/peers/peers.py twice: cold (its caches empty:
kjit's, Numba's, CuPy's, Inductor's and Triton's) and warm (the same caches again). Prints one
side-by-side table, writes compare.json (kjit's record schema plus `tool`, `state`,
`process_wall_ms`) and, through scripts/plot_results.py (matplotlib), compare.png.
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
PEERS = ["numba_vectorize", "numba_jit", "numba_jit_cached", "cupy_elementwise", "torch_eager", "torch_compile"]


def run_process(command, env, json_path):
    start = time.perf_counter()
    done = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wall = (time.perf_counter() - start) * 1e3
    try:
        row = json.loads(pathlib.Path(json_path).read_text())[0]
    except (OSError, ValueError, IndexError):
        row = {"status": "error", "error": done.stdout[-500:]}
    row["process_wall_ms"] = wall  # the whole process, interpreter start included
    row["exit_code"] = done.returncode
    return row


def summarize(row):
    """kjit's phases folded into the peers' vocabulary."""
    if row.get("tool") != "kjit":
        return row
    get = lambda k: row.get(k) or 0.0
    row["import_ms"] = 0.0
    row["context_ms"] = get("driver_init_ms") + get("context_ms")
    row["first_call_ms"] = sum(get(k) for k in ("codegen_ms", "cache_lookup_ms", "nvrtc_ms", "ptx_to_cubin_ms",
                                                "cache_store_ms", "module_load_ms", "get_function_ms",
                                                "first_launch_ms"))
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kjit", default="build/kjit")
    parser.add_argument("--n", type=int, nargs="+", default=[1_000_000, 16_777_216])
    parser.add_argument("--peers", nargs="+", default=PEERS)
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path("."))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        scratch = pathlib.Path(scratch)
        for n in args.n:
            tools = [("kjit", None)] + [(p, p) for p in args.peers]
            for tool, peer in tools:
                caches = scratch / f"{tool}-{n}"
                env = dict(os.environ, KJIT_CACHE_DIR=str(caches / "kjit"), NUMBA_CACHE_DIR=str(caches / "numba"),
                           CUPY_CACHE_DIR=str(caches / "cupy"), TORCHINDUCTOR_CACHE_DIR=str(caches / "inductor"),
                           TRITON_CACHE_DIR=str(caches / "triton"), PYTHONUNBUFFERED="1")
                for state in ("cold", "warm"):
                    out = scratch / f"{tool}-{n}-{state}.json"
                    if peer is None:
                        # --skip-ceiling: the copy-bandwidth probe is kjit's extra, not part of a call
                        command = [args.kjit, "run", "--skip-ceiling", "--set", f"n={n}", "--json", str(out)]
                    else:
                        command = [sys.executable, str(HERE / "peers" / "peers.py"), peer, "--n", str(n), "--json", str(out)]
                    row = run_process(command, env, out)
                    row.update(tool=tool, state=state, n=n)
                    rows.append(summarize(row))
                    print(f"  {tool:18} n={n:<9} {state:4} {row.get('status')} {row['process_wall_ms']:9.0f} ms",
                          file=sys.stderr, flush=True)
    (args.out / "compare.json").write_text(json.dumps(rows, indent=1))

    f = lambda v, scale=1.0, digits=1: "-" if v is None else f"{v * scale:.{digits}f}"
    print(f"{'tool':18} {'n':>9} {'state':5} {'process':>9} {'import':>8} {'context':>8} {'1st call':>9} "
          f"{'cold µs':>9} {'batch µs':>9} {'GB/s':>6}  status")
    for r in rows:
        print(f"{r['tool']:18} {r['n']:>9} {r['state']:5} {f(r.get('process_wall_ms'), digits=0):>9} "
              f"{f(r.get('import_ms')):>8} {f(r.get('context_ms')):>8} {f(r.get('first_call_ms')):>9} "
              f"{f(r.get('kernel_cold_median_ms'), 1e3, 2):>9} {f(r.get('kernel_batch_median_ms'), 1e3, 2):>9} "
              f"{f(r.get('effective_gbps'), digits=0):>6}  {r.get('status')} {r.get('error', '')[:60]}")
    # The picture is the plotting script's: it draws compare.json like any other results file.
    plot = HERE.parent / "scripts" / "plot_results.py"
    if subprocess.run([sys.executable, str(plot), str(args.out / "compare.json"), "--out", str(args.out)]).returncode:
        print("(compare.png not drawn: see the plotting script's message)", file=sys.stderr)


if __name__ == "__main__":
    main()
