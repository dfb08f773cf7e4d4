#!/usr/bin/env python3
"""The hidden layer (normalize -> weigh -> tanh) written the way users of each tool write it, timed
the way kjit times itself, printed as one record in kjit's JSON schema (flat; null where a figure
does not apply). Run each tool in a fresh process: bench/compare.py does.

    python3 bench/peers/peers.py TOOL [--n N] [--dtype float32|float64] [--repeat K] [--json FILE]

TOOL: numba_vectorize   the seed's code: three @vectorize(target='cuda') functions on host arrays,
                        tanh as (e^x - e^-x)/(e^x + e^-x); every call copies to and from the GPU
      numba_jit         one fused @cuda.jit kernel on device arrays (numba_jit_cached: cache=True)
      cupy_elementwise  one fused cupy.ElementwiseKernel
      torch_eager       torch.tanh(g / 255 * w): three kernels and two temporaries
      torch_compile     torch.compile of the same function (Inductor fuses it into one Triton kernel)

Figures: import_ms (importing the tool), context_ms (first CUDA work: context creation), first_call_ms
(the first call, compilation included, to completion), kernel_cold_median_ms (events around one call,
L2 flushed before it, median of K), kernel_batch_median_ms (K calls back to back / K), process_wall_ms.
"""
import argparse
import json
import math
import os
import sys
import time

T0 = time.perf_counter()


def ms(start):
    return (time.perf_counter() - start) * 1e3


# ---- each tool: import it, then build f(greyscales, weights) -> out on that tool's arrays --------

def numba_import():
    # Compatibility shim: the GPU machine's numba-cuda predates its NumPy (2.5), which dropped
    # names numba still looks up at import (first seen: np.row_stack). The shim only restores those
    # aliases; it changes no arithmetic.
    import numpy as np
    for old, new in (("row_stack", "vstack"), ("in1d", "isin"), ("trapz", "trapezoid"), ("product", "prod"),
                     ("cumproduct", "cumprod"), ("sometrue", "any"), ("alltrue", "all"), ("round_", "round"),
                     ("float_", "float64"), ("complex_", "complex128"), ("NaN", "nan"), ("Inf", "inf")):
        if not hasattr(np, old) and hasattr(np, new):
            setattr(np, old, getattr(np, new))
    from numba import cuda, vectorize
    return {"cuda": cuda, "vectorize": vectorize}


def numba_vectorize_build(mod, dtype):
    vectorize = mod["vectorize"]
    sig = "float32" if dtype == "float32" else "float64"

    # As in the seed: three functions, each a kernel, each called on host arrays.
    @vectorize([f"{sig}({sig})"], target="cuda")
    def normalize(grayscales):
        return grayscales / 255

    @vectorize([f"{sig}({sig}, {sig})"], target="cuda")
    def weigh(values, weights):
        return values * weights

    @vectorize([f"{sig}({sig})"], target="cuda")
    def activate(values):
        return (math.exp(values) - math.exp(-values)) / (math.exp(values) + math.exp(-values))

    return lambda g, w: activate(weigh(normalize(g), w))


def numba_jit_build(mod, dtype, cache=False):
    cuda = mod["cuda"]

    @cuda.jit(cache=cache)
    def hidden_layer(g, w, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = math.tanh(g[i] / 255 * w[i])

    def call(g, w):
        out = cuda.device_array_like(g)
        threads = 256
        hidden_layer[(g.size + threads - 1) // threads, threads](g, w, out)
        return out
    return call


def cupy_import():
    import cupy
    return cupy


def cupy_build(cupy, dtype):
    # Parameter types are NumPy names (CuPy reads "float" as float64); the body is CUDA C++.
    ctype = "float" if dtype == "float32" else "double"
    kernel = cupy.ElementwiseKernel(f"{dtype} g, {dtype} w", f"{dtype} y", f"y = tanh(g / ({ctype})255 * w)",
                                    "hidden_layer")
    return lambda g, w: kernel(g, w)


def torch_import():
    import torch
    return torch


def torch_eager_build(torch, dtype):
    return lambda g, w: torch.tanh(g / 255 * w)


def torch_compile_build(torch, dtype):
    return torch.compile(lambda g, w: torch.tanh(g / 255 * w))


TOOLS = {
    "numba_vectorize": ("numba", numba_import, numba_vectorize_build, "separate", "exp"),
    "numba_jit": ("numba", numba_import, lambda m, d: numba_jit_build(m, d, cache=False), "fused", "builtin"),
    "numba_jit_cached": ("numba", numba_import, lambda m, d: numba_jit_build(m, d, cache=True), "fused", "builtin"),
    "cupy_elementwise": ("cupy", cupy_import, cupy_build, "fused", "builtin"),
    "torch_eager": ("torch", torch_import, torch_eager_build, "separate", "builtin"),
    "torch_compile": ("torch", torch_import, torch_compile_build, "fused", "builtin"),
}


# ---- per framework: put arrays on the device, synchronize, time with events, flush L2 ------------

class Device:
    """Arrays, events and an L2 flush through whichever framework the tool uses."""

    def __init__(self, family, mod):
        self.family = family
        if family == "torch":
            self.torch = mod
        elif family == "cupy":
            self.cupy = mod
        else:
            self.cuda = mod["cuda"]
        self.flush_buffer = None

    def context(self):
        if self.family == "torch":
            self.torch.zeros(1, device="cuda")
            self.torch.cuda.synchronize()
        elif self.family == "cupy":
            self.cupy.zeros(1)
            self.cupy.cuda.Device().synchronize()
        else:
            self.cuda.to_device([0.0])
            self.cuda.synchronize()

    def arrays(self, g, w, on_host):
        if on_host:
            return g, w
        if self.family == "torch":
            return self.torch.from_numpy(g).cuda(), self.torch.from_numpy(w).cuda()
        if self.family == "cupy":
            return self.cupy.asarray(g), self.cupy.asarray(w)
        return self.cuda.to_device(g), self.cuda.to_device(w)

    def to_host(self, out):
        if self.family == "torch":
            return out.cpu().numpy()
        if self.family == "cupy":
            return self.cupy.asnumpy(out)
        return out if not hasattr(out, "copy_to_host") else out.copy_to_host()

    def sync(self):
        if self.family == "torch":
            self.torch.cuda.synchronize()
        elif self.family == "cupy":
            self.cupy.cuda.Device().synchronize()
        else:
            self.cuda.synchronize()

    def flush_l2(self):
        size = 2 * 60 * 1024 * 1024 // 4  # twice an H200's 60 MB L2, in float32
        if self.family == "torch":
            if self.flush_buffer is None:
                self.flush_buffer = self.torch.empty(size, device="cuda")
            self.flush_buffer.zero_()
        elif self.family == "cupy":
            if self.flush_buffer is None:
                self.flush_buffer = self.cupy.empty(size, dtype="float32")
            self.flush_buffer.fill(0)
        else:
            if self.flush_buffer is None:
                import numpy as np
                self.flush_buffer = self.cuda.device_array(size, dtype=np.float32)
            self.flush_buffer[:] = 0

    def event_pair(self):
        if self.family == "torch":
            return self.torch.cuda.Event(enable_timing=True), self.torch.cuda.Event(enable_timing=True)
        if self.family == "cupy":
            return self.cupy.cuda.Event(), self.cupy.cuda.Event()
        return self.cuda.event(), self.cuda.event()

    def elapsed_ms(self, start, stop):
        if self.family == "torch":
            stop.synchronize()
            return start.elapsed_time(stop)
        if self.family == "cupy":
            stop.synchronize()
            return self.cupy.cuda.get_elapsed_time(start, stop)
        stop.synchronize()
        return self.cuda.event_elapsed_time(start, stop)

    def record(self, event):
        event.record()


def median(values):
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def run(tool, n, dtype, repeat):
    family, import_tool, build, fusion, formula = TOOLS[tool]
    row = {"schema_version": "1.0.0", "command": "peer", "name": "hidden_layer", "variant": tool,
           "n": n, "dtype": dtype, "fusion": fusion, "formula": formula, "status": "ok", "error": ""}
    import numpy as np
    rng = np.random.default_rng(1)
    greyscales = np.floor(rng.uniform(0, 255, n)).astype(dtype)
    weights = rng.normal(0.5, 0.1, n).astype(dtype)

    start = time.perf_counter()
    mod = import_tool()
    row["import_ms"] = ms(start)
    device = Device(family, mod)
    start = time.perf_counter()
    device.context()
    row["context_ms"] = ms(start)
    on_host = tool == "numba_vectorize"  # the seed passes numpy arrays
    g, w = device.arrays(greyscales, weights, on_host)
    f = build(mod, dtype)

    start = time.perf_counter()
    out = f(g, w)
    device.sync()
    row["first_call_ms"] = ms(start)
    result = device.to_host(out)
    ref = np.tanh(greyscales.astype(np.float64) / 255 * weights.astype(np.float64))
    finite = np.isfinite(result)
    row["nan_count"] = int(np.isnan(result).sum())
    row["max_abs_error"] = float(np.abs(result[finite] - ref[finite]).max()) if finite.any() else None

    for _ in range(3):
        f(g, w)
    cold = []
    start_event, stop_event = device.event_pair()
    for _ in range(repeat):
        device.flush_l2()
        device.record(start_event)
        f(g, w)
        device.record(stop_event)
        cold.append(device.elapsed_ms(start_event, stop_event))
    batches = []
    for _ in range(10):
        device.record(start_event)
        for _ in range(repeat):
            f(g, w)
        device.record(stop_event)
        batches.append(device.elapsed_ms(start_event, stop_event) / repeat)
    row["kernel_cold_median_ms"] = median(cold)
    row["kernel_cold_min_ms"] = min(cold)
    row["kernel_batch_median_ms"] = median(batches)
    itemsize = np.dtype(dtype).itemsize
    bytes_moved = (7 if fusion == "separate" else 3) * n * itemsize
    row["bytes_moved"] = bytes_moved
    row["effective_gbps"] = bytes_moved / (row["kernel_cold_median_ms"] * 1e-3) / 1e9
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tool", choices=sorted(TOOLS))
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--json")
    args = parser.parse_args()
    try:
        row = run(args.tool, args.n, args.dtype, args.repeat)
    except Exception as e:  # a tool that is missing or broken is a row that says so
        row = {"schema_version": "1.0.0", "command": "peer", "variant": args.tool, "n": args.n, "dtype": args.dtype,
               "status": "error", "error": f"{type(e).__name__}: {e}"}
    row["process_wall_ms"] = ms(T0)
    text = json.dumps([row], indent=1)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text)
    print(text)
    return 0 if row["status"] == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
