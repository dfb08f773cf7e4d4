#!/usr/bin/env python3
"""kjit from Python beside the tools Python users call kernels with, in one run (issue 24's anchors).

    python3 bench/python_calls.py [--kjit build/kjit] [--calls 20000] [--out DIR]

1. Host time per call of an already compiled tiny kernel (the hidden layer at n = 4096): 20,000
   back-to-back calls, then one sync, 5 rounds alternated, median: kjit's Kernel on PyTorch
   tensors and on CuPy arrays, CuPy RawKernel and ElementwiseKernel, Triton @jit, PyTorch's 3
   eager ops and Numba @cuda.jit.
   Beside them, what one array's __dlpack__ costs in PyTorch and CuPy (kjit reads a
   torch.Tensor's fields instead: PyTorch's __dlpack__ is Python code). With 20,000 calls the
   launch queue fills and the loop waits for the GPU, so the same calls are timed again while
   the GPU keeps up (500 calls, timed to the last enqueue, then a sync); and the GPU's own time
   per launch of the same kernel, back to back and in a CUDA graph (kjit's batch and graph
   loops at n = 4096), says where waiting for the GPU begins.
2. Session.run of the default config in a warm session: its host time beyond the timed loops
   (the cold, batch and graph loops and the graph they replay), 10 runs; then 3 more under
   kjit.trace, whose spans say where that time goes.
3. A fresh process: `import kjit` + Session + the first run, against `kjit run`'s whole process,
   alternated, 5 each, the kjit cache warm for both.
Writes python_calls.json to DIR and prints the tables.
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench" / "peers"))
N = 4096


def per_call_us(call, sync, calls, sync_timed=True):
    """Host time per call of `calls` back to back (after 100 untimed), with the sync after them
    timed; or, with fewer calls than the launch queue holds, timed up to the last enqueue only
    (not sync_timed): the host's own time while the GPU keeps up."""
    for _ in range(100):
        call()
    sync()
    start = time.perf_counter()
    for _ in range(calls):
        call()
    if sync_timed:
        sync()
    elapsed = time.perf_counter() - start
    sync()
    return elapsed / calls * 1e6


def tiny_kernels():
    """name -> (call, sync): each the hidden layer at n = 4096, compiled and warmed."""
    import cupy
    import torch
    import triton
    import triton.language as tl
    from peers import numba_import

    import kjit
    rng = torch.Generator().manual_seed(1)
    g = torch.floor(torch.rand(N, generator=rng) * 255).cuda()
    w = (0.5 + 0.1 * torch.randn(N, generator=rng)).cuda()
    out = torch.empty_like(g)
    cg, cw, cout = cupy.asarray(g), cupy.asarray(w), cupy.empty(N, dtype=cupy.float32)
    torch_sync, cupy_sync = torch.cuda.synchronize, cupy.cuda.runtime.deviceSynchronize

    session = kjit.Session()
    k = session.kernel(ROOT / "configs" / "hidden_layer.json", set={"n": N})
    kernels = {
        "kjit Kernel (torch)": (lambda: k(greyscales=g, weights=w, out=out), torch_sync),
        "kjit Kernel (cupy)": (lambda: k(greyscales=cg, weights=cw, out=cout), cupy_sync),
    }
    raw = cupy.RawKernel(r'''extern "C" __global__ void hidden_layer(const float* g, const float* w, float* y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = tanhf(g[i] / 255.0f * w[i]);
    }''', "hidden_layer")
    kernels["CuPy RawKernel"] = (lambda: raw(((N + 255) // 256,), (256,), (cg, cw, cout, cupy.int32(N))), cupy_sync)
    elementwise = cupy.ElementwiseKernel("float32 g, float32 w", "float32 y", "y = tanhf(g / 255.0f * w)", "hidden")
    kernels["CuPy ElementwiseKernel"] = (lambda: elementwise(cg, cw, cout), cupy_sync)

    @triton.jit
    def hidden_layer(g_ptr, w_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        x = tl.load(g_ptr + offsets, mask=mask) / 255.0 * tl.load(w_ptr + offsets, mask=mask)
        e = tl.exp(2 * x)
        tl.store(y_ptr + offsets, (e - 1) / (e + 1), mask=mask)
    kernels["Triton @jit"] = (lambda: hidden_layer[(N // 1024,)](g, w, out, N, BLOCK=1024), torch_sync)
    t1, t2 = torch.empty_like(g), torch.empty_like(g)
    kernels["PyTorch, 3 eager ops"] = (
        lambda: (torch.div(g, 255, out=t1), torch.mul(t1, w, out=t2), torch.tanh(t2, out=out)), torch_sync)
    cuda = numba_import()["cuda"]
    import math

    @cuda.jit
    def numba_hidden(g, w, y):
        i = cuda.grid(1)
        if i < y.size:
            y[i] = math.tanh(g[i] / 255 * w[i])
    ng, nw, nout = cuda.to_device(g.cpu().numpy()), cuda.to_device(w.cpu().numpy()), cuda.device_array(N, "float32")
    kernels["Numba @cuda.jit"] = (lambda: numba_hidden[(N + 255) // 256, 256](ng, nw, nout), cuda.synchronize)
    # Every tool computed the same layer: kjit's answer checked against the float64 reference.
    assert k.verify(greyscales=g, weights=w, out=out)["status"] == "PASS"
    exports = {"torch __dlpack__ (one array)": (lambda: g.__dlpack__(max_version=(1, 0)), torch_sync),
               "cupy __dlpack__ (one array)": (lambda: cg.__dlpack__(max_version=(1, 0)), cupy_sync)}
    return kernels, exports, session


def warm_session_overhead(session, runs=10):
    config = ROOT / "configs" / "hidden_layer.json"
    session.run(config)  # the first run opens nothing new (the kernels above opened the GPU), but makes its data
    rows = []
    for _ in range(runs):
        start = time.perf_counter()
        r = session.run(config)
        wall = (time.perf_counter() - start) * 1e3
        loops = r.phases.get("timed_launches", 0) + r.phases.get("graph_build", 0)
        rows.append({"wall_ms": wall, "timed_loops_ms": loops, "beyond_ms": wall - loops,
                     "phases": {k: v for k, v in r.phases.items() if k not in ("timed_launches", "graph_build")},
                     "kernel_median_ms": {mode: stats["median"] for mode, stats in r.kernel.items()},
                     "cold_noise": r.record.get("kernel_cold_noise")})
    return rows


def traced_spans(session, runs=3):
    """Warm runs under kjit.trace, each: ms per top-level span on each thread; on the calling
    thread the time no span covers, and where it is (before the first span and after the last:
    Python's side; the gaps between spans, largest first)."""
    import tempfile

    import kjit
    config = ROOT / "configs" / "hidden_layer.json"
    per_run = []
    for _ in range(runs):
        path = pathlib.Path(tempfile.mkdtemp(prefix="kjit-trace-"), "warm_run.json")
        with kjit.trace(path):
            start_ns = time.monotonic_ns()
            session.run(config)
            end_ns = time.monotonic_ns()
        events = sorted((e for e in json.loads(path.read_text())["traceEvents"] if e["ph"] == "X"),
                        key=lambda e: (e["tid"], e["ts"], -e["dur"]))
        top = {}  # tid -> its top-level spans in order: one inside another on its thread is part of it
        for e in events:
            spans_of = top.setdefault(e["tid"], [])
            if not spans_of or e["ts"] >= spans_of[-1]["ts"] + spans_of[-1]["dur"]:
                spans_of.append(e)
        spans = {}
        for tid, spans_of in top.items():
            for e in spans_of:
                spans[(e["name"], tid)] = spans.get((e["name"], tid), 0) + e["dur"] / 1e3
        caller = next(e["tid"] for e in events if e["name"] == "timed_launches")
        mine = top[caller]
        wall_ms = (end_ns - start_ns) / 1e6
        gaps = [{"after": a["name"], "before": b["name"], "ms": (b["ts"] - a["ts"] - a["dur"]) / 1e3}
                for a, b in zip(mine, mine[1:])]
        per_run.append({"wall_ms": wall_ms,
                        "spans_ms": {f"{name} ({'caller' if tid == caller else tid})": ms for (name, tid), ms in spans.items()},
                        "caller_untraced_ms": wall_ms - sum(ms for (_, tid), ms in spans.items() if tid == caller),
                        "outside_first_and_last_span_ms": wall_ms - (mine[-1]["ts"] + mine[-1]["dur"] - mine[0]["ts"]) / 1e3,
                        "gaps": sorted(gaps, key=lambda g: -g["ms"])})
    return per_run


FRESH = """
import time, sys
start = time.perf_counter()
import kjit
r = kjit.Session().run(sys.argv[1])
print((time.perf_counter() - start) * 1e3, r.record["status"])
"""


def fresh_processes(kjit_binary, rounds=5):
    config = str(ROOT / "configs" / "hidden_layer.json")
    subprocess.run([kjit_binary, "run", config], capture_output=True, check=True)  # the cache warm for both
    rows = []
    for _ in range(rounds):
        start = time.perf_counter()
        cli = subprocess.run([kjit_binary, "run", config], capture_output=True, text=True)
        cli_ms = (time.perf_counter() - start) * 1e3
        start = time.perf_counter()
        py = subprocess.run([sys.executable, "-c", FRESH, config], capture_output=True, text=True)
        py_process_ms = (time.perf_counter() - start) * 1e3
        import_and_run_ms, status = py.stdout.split()
        rows.append({"cli_process_ms": cli_ms, "cli_exit": cli.returncode, "python_import_and_run_ms": float(import_and_run_ms),
                     "python_process_ms": py_process_ms, "python_status": status})
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kjit", default=str(ROOT / "build" / "kjit"))
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", default=".")
    args = parser.parse_args()

    kernels, exports, session = tiny_kernels()
    import cupy
    import torch
    for kind in (torch.Tensor, cupy.ndarray):
        tables = [name for name in ("__dlpack_c_exchange_api__", "__c_dlpack_exchange_api__") if hasattr(kind, name)]
        print(f"{kind.__module__}.{kind.__name__}: DLPack's C exchange table {' and '.join(tables) or 'absent'}")
    print(f"torch {torch.__version__}, cupy {cupy.__version__}")
    samples = {name: [] for name in {**kernels, **exports}}
    enqueue = {name: [] for name in kernels}
    for _ in range(args.rounds):
        for name, (call, sync) in {**kernels, **exports}.items():
            samples[name].append(per_call_us(call, sync, args.calls))
        for name, (call, sync) in kernels.items():
            enqueue[name].append(per_call_us(call, sync, 500, sync_timed=False))
    print(f"host time per call, n = {N}; median of {args.rounds} rounds (min–max): {args.calls} calls then a "
          "sync | 500 calls timed to the last enqueue")
    for name, values in samples.items():
        alone = f"   | {statistics.median(enqueue[name]):6.2f} µs  ({min(enqueue[name]):.2f}–{max(enqueue[name]):.2f})" \
            if name in enqueue else ""
        print(f"  {name:28} {statistics.median(values):6.2f} µs  ({min(values):.2f}–{max(values):.2f}){alone}")
    floor = session.run(ROOT / "configs" / "hidden_layer.json", set={"n": N}).record
    print(f"  the GPU's time per launch of kjit's kernel at n = {N}: back to back "
          f"{floor['kernel_batch_median_ms'] * 1e3:.2f} µs, in a CUDA graph {floor['kernel_graph_median_ms'] * 1e3:.2f} µs")

    overhead = warm_session_overhead(session)
    beyond = [r["beyond_ms"] for r in overhead]
    print(f"\nSession.run of the default config, warm session, {len(overhead)} runs: wall "
          f"{statistics.median(r['wall_ms'] for r in overhead):.2f} ms, of which timed loops "
          f"{statistics.median(r['timed_loops_ms'] for r in overhead):.2f} ms; beyond them "
          f"{statistics.median(beyond):.2f} ms median ({min(beyond):.2f}–{max(beyond):.2f})")
    print("  phases of the median run:", json.dumps({k: round(v, 3) for k, v in sorted(overhead[len(overhead) // 2]["phases"].items())}))
    for mode in ("cold", "batch", "graph"):  # the check runs during the timed loops: their kernel times, run by run
        print(f"  kernel {mode} median, ms, run by run:", " ".join(f"{r['kernel_median_ms'][mode]:.4f}" for r in overhead))
    traced = traced_spans(session)
    middle = sorted(traced, key=lambda r: r["wall_ms"])[len(traced) // 2]
    print(f"  traced (median of {len(traced)} by wall, {middle['wall_ms']:.2f} ms): untraced on the calling thread "
          f"{middle['caller_untraced_ms']:.3f} ms; top-level spans:")
    for name, ms in sorted(middle["spans_ms"].items(), key=lambda item: -item[1]):
        print(f"    {ms:8.3f} ms  {name}")
    print(f"  untraced: {middle['outside_first_and_last_span_ms']:.3f} ms before the first span and after the last "
          "(Python's side), and the largest gaps between spans:")
    for gap in middle["gaps"][:8]:
        print(f"    {gap['ms']:8.3f} ms  after {gap['after']}, before {gap['before']}")

    fresh = fresh_processes(args.kjit)
    cli = statistics.median(r["cli_process_ms"] for r in fresh)
    py = statistics.median(r["python_import_and_run_ms"] for r in fresh)
    print(f"\nfresh process, warm cache, {len(fresh)} alternated: kjit run (whole process) {cli:.0f} ms; "
          f"import kjit + first run {py:.0f} ms (python's whole process "
          f"{statistics.median(r['python_process_ms'] for r in fresh):.0f} ms); difference {py - cli:+.0f} ms")

    pathlib.Path(args.out, "python_calls.json").write_text(json.dumps(
        {"n": N, "calls": args.calls, "per_call_us": samples, "enqueue_only_us": enqueue,
         "gpu_per_launch_us": {"batch": floor["kernel_batch_median_ms"] * 1e3, "graph": floor["kernel_graph_median_ms"] * 1e3},
         "warm_session": overhead, "warm_traced": traced,
         "fresh_process": fresh}, indent=1))


if __name__ == "__main__":
    main()
