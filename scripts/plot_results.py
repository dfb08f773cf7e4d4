#!/usr/bin/env python3
"""Turn kjit results (kjit run/sweep/merge --json) into PNGs.

    scripts/plot_results.py RESULTS.json|RESULTS.csv ... [--out DIR]

Writes, where the data has what they need:
  kernel_time.png     cold median kernel time and effective GB/s per variant (one panel per n)
  time_vs_n.png       cold median kernel time against n, one line per variant (log-log)
  jit_phases.png      compile-side phases per variant: cache lookup, NVRTC, PTX -> cubin, load
  startup.png         every host phase of each record as a stacked bar: where a run's time goes
  compile_tradeoff.png  compile time (NVRTC + ptxas) against cold kernel time, a point per variant
                      (configs/sweep_compile_effort.json: what faster compiles cost at run time)
  compare.png         bench/compare.py's results: import, CUDA start-up and first call per tool and state
  roofline.png        each record on this GPU's roofline: FLOP/s against arithmetic intensity (flops per
                      byte moved), under the measured copy ceiling's slope and the FMA and tensor-core
                      ceilings its records measured; a colour per config, each point named where there
                      are at most 16, else each config's nearest to its roof
  tune_progress.png   kjit tune --json (one file per search, --replay's too): the best time so far
                      against evaluations, a line per file, beside the exhaustive best and 95 % / 99 % of it
"""
import argparse
import csv
import gzip
import json
import os
import pathlib
import sys

try:
    import matplotlib
except ImportError:
    # The first python3 on the PATH may be a virtual environment's: the system one may have it.
    system = "/usr/bin/python3"
    if sys.executable != system and os.path.exists(system) and not os.environ.get("KJIT_PLOT_REEXEC"):
        os.environ["KJIT_PLOT_REEXEC"] = "1"
        os.execv(system, [system, *sys.argv])
    sys.exit(f"plot_results: {sys.executable} has no matplotlib: install it (Debian: sudo apt-get install "
             "python3-matplotlib; or: python3 -m pip install matplotlib)")

matplotlib.use("Agg")  # files only, no display needed
import matplotlib.pyplot as plt  # noqa: E402

JIT_PHASES = ["cache_lookup_ms", "nvrtc_ms", "ptx_to_cubin_ms", "cache_store_ms", "module_load_ms", "get_function_ms"]
HOST_PHASES = ["driver_init_ms", "context_ms", "codegen_ms", "cache_lookup_ms", "nvrtc_ms", "ptx_to_cubin_ms",
               "cache_store_ms", "module_load_ms", "get_function_ms", "alloc_ms", "h2d_ms", "first_launch_ms",
               "d2h_ms"]


# One colour per phase, the same in every plot.
PHASE_COLORS = {phase: plt.cm.tab20.colors[i % 20] for i, phase in enumerate(dict.fromkeys(HOST_PHASES + JIT_PHASES))}


def label(row, without=()):
    """The point's own label (sweep values), minus the axes named in `without`."""
    text = row.get("sweep_point") or row.get("variant") or row.get("name", "?")
    return " ".join(part for part in text.split() if part.split("=")[0] not in without)


def kernel_time(rows, out):
    timed = [r for r in rows if r.get("kernel_cold_median_ms") is not None]
    if not timed:
        return None
    sizes = sorted({r["n"] for r in timed})
    fig, axes = plt.subplots(len(sizes), 2, figsize=(14, 0.32 * len(timed) + 2.5 * len(sizes)), squeeze=False)
    for row_axes, n in zip(axes, sizes):
        group = sorted((r for r in timed if r["n"] == n), key=lambda r: r["kernel_cold_median_ms"])
        names = [label(r, without=("n",)) for r in group]
        times = [r["kernel_cold_median_ms"] * 1e3 for r in group]
        rates = [r.get("effective_gbps") or 0 for r in group]
        colors = ["tab:red" if r.get("status") not in ("PASS", "ok") else "tab:blue" for r in group]
        row_axes[0].barh(names, times, color=colors)
        row_axes[0].set_xlabel("cold median kernel time (µs)")
        row_axes[0].set_title(f"n = {n:,}: kernel time (red: failed check)")
        row_axes[0].invert_yaxis()
        row_axes[1].barh(names, rates, color="tab:green")
        ceiling = next((r["copy_ceiling_gbps"] for r in group if r.get("copy_ceiling_gbps")), None)
        if ceiling:
            row_axes[1].axvline(ceiling, color="k", linestyle="--", label=f"measured copy ceiling {ceiling:.0f} GB/s")
            row_axes[1].legend(loc="lower right")
        row_axes[1].set_xlabel("effective GB/s (bytes moved / cold median)")
        row_axes[1].set_yticks([])
        row_axes[1].invert_yaxis()
    fig.tight_layout()
    path = out / "kernel_time.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def time_vs_n(rows, out):
    timed = [r for r in rows if r.get("kernel_cold_median_ms") is not None]
    series = {}
    for r in timed:
        series.setdefault(label(r, without=("n",)), []).append((r["n"], r["kernel_cold_median_ms"] * 1e3))
    series = {k: sorted(v) for k, v in series.items() if len({n for n, _ in v}) > 1}
    if not series:
        return None
    fig, ax = plt.subplots(figsize=(14, 7))
    colors = plt.cm.tab20.colors
    for i, (name, points) in enumerate(sorted(series.items())):
        # 20 colours, then dashed and dotted lines, so that no two series look alike
        ax.plot([n for n, _ in points], [t for _, t in points], marker="o", color=colors[i % 20],
                linestyle=["-", "--", ":"][i // 20 % 3], label=name)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("n (elements)")
    ax.set_ylabel("cold median kernel time (µs)")
    ax.set_title("kernel time against n")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    path = out / "time_vs_n.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def stacked(rows, phases, title, path):
    rows = [r for r in rows if any(r.get(p) for p in phases)]
    if not rows:
        return None
    names = [f"{label(r)} [{r.get('cache', '')}]" for r in rows]
    fig, ax = plt.subplots(figsize=(12, 0.3 * len(rows) + 2))
    left = [0.0] * len(rows)
    for phase in phases:
        values = [r.get(phase) or 0 for r in rows]
        if any(values):
            ax.barh(names, values, left=left, label=phase.removesuffix("_ms"), color=PHASE_COLORS[phase])
            left = [a + b for a, b in zip(left, values)]
    ax.set_xlabel("ms (host clock)")
    ax.set_title(title)
    ax.invert_yaxis()
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))  # beside the bars, not on them
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def compile_tradeoff(rows, out):
    varied = len({r.get("compile_method") for r in rows}) > 1 or any("fast-compile" in r.get("variant", "") for r in rows)
    points = [r for r in rows if r.get("nvrtc_ms") is not None and r.get("kernel_cold_median_ms") is not None]
    if not varied or len(points) < 2:
        return None
    fig, ax = plt.subplots(figsize=(9, 6))
    for r in points:
        compile_ms = r["nvrtc_ms"] + (r.get("ptx_to_cubin_ms") or 0)
        kernel_us = r["kernel_cold_median_ms"] * 1e3
        ax.scatter(compile_ms, kernel_us, color="tab:blue")
        ax.annotate(label(r), (compile_ms, kernel_us), fontsize=7, xytext=(4, 2), textcoords="offset points")
    ax.set_xlabel("cold compile: NVRTC + PTX -> cubin (ms)")
    ax.set_ylabel("cold median kernel time (us)")
    ax.set_title("compile time against kernel time")
    ax.grid(alpha=0.3)
    path = out / "compile_tradeoff.png"
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def roofline(rows, out):
    """The records with flops, a cold time and the ceilings, on the GPU's roofline (log-log)."""
    placed = [r for r in rows if r.get("arithmetic_intensity") and r.get("tflops") and r.get("copy_ceiling_gbps")]
    if not placed:
        return None
    copy = max(r["copy_ceiling_gbps"] for r in placed) * 1e9
    ceilings = {}
    for r in placed:
        if r.get("flops_ceiling_tflops"):
            ceilings[r["flops_unit"]] = max(ceilings.get(r["flops_unit"], 0), r["flops_ceiling_tflops"] * 1e12)
    lowest = min([r["arithmetic_intensity"] for r in placed] + [c / copy for c in ceilings.values()]) / 8
    highest = max([r["arithmetic_intensity"] for r in placed] + [c / copy for c in ceilings.values()]) * 4
    fig, ax = plt.subplots(figsize=(12, 6.5))
    xs = [lowest * (highest / lowest) ** (i / 200) for i in range(201)]
    top = max(ceilings.values(), default=copy * highest)
    ax.plot(xs, [min(x * copy, top) for x in xs], color="black", linewidth=1.5,
            label=f"copy ceiling {copy / 1e12:.2f} TB/s")
    for unit, flops in sorted(ceilings.items()):
        name = "tensor cores (kjit's GEMM)" if unit == "tensor" else "FMA (kjit's probe)"
        ridge = flops / copy  # where the copy ceiling's slope meets this roof
        ax.plot([ridge, highest], [flops, flops], color="black", linestyle="--" if unit == "tensor" else ":", linewidth=1.5)
        ax.annotate(f"{name}: {flops / 1e12:.0f} TFLOP/s", (ridge, flops), xytext=(3, 3), textcoords="offset points",
                    fontsize=8)
    # A colour per config (a legend entry each); each point named beside it where there are few,
    # else only each config's nearest to its roof, so the chart stays readable at any sweep size.
    groups = list(dict.fromkeys(r.get("name", "?") for r in placed))
    colors = plt.cm.tab10.colors
    few = len(placed) <= 16
    for g, name in enumerate(groups):
        members = [r for r in placed if r.get("name", "?") == name]
        xs_g = [r["arithmetic_intensity"] for r in members]
        ys_g = [r["tflops"] * 1e12 for r in members]
        ax.scatter(xs_g, ys_g, color=colors[g % len(colors)], s=22, zorder=3, alpha=0.8,
                   label=f"{name}: {len(members)} point{'s' if len(members) > 1 else ''}")
        named = members if few else [max(members, key=lambda r: r.get("percent_of_roof") or 0)]
        for r in named:
            share = f" ({r['percent_of_roof']:.0f} % of roof)" if r.get("percent_of_roof") is not None else ""
            ax.annotate(label(r) + share, (r["arithmetic_intensity"], r["tflops"] * 1e12), fontsize=7,
                        xytext=(4, -10), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (flops per byte moved, kjit's count)")
    ax.set_ylabel("FLOP/s (cold median)")
    ax.set_title(f"the roofline of {placed[0].get('device_name') or 'the GPU'}")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8, loc="upper left")
    path = out / "roofline.png"
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def compare_tools(rows, out):
    """bench/compare.py's rows (they have a `tool` column): the first call per tool, at the first n."""
    rows = [r for r in rows if r.get("tool") and r.get("status") in ("ok", "PASS")]
    if not rows:
        return None
    n = rows[0]["n"]
    rows = [r for r in rows if r["n"] == n]
    names = [f"{r['tool']} ({r['state']})" for r in rows]
    fig, ax = plt.subplots(figsize=(11, 0.35 * len(rows) + 2))
    left = [0.0] * len(rows)
    for key, title in (("import_ms", "import"), ("context_ms", "CUDA start-up"), ("first_call_ms", "first call")):
        values = [r.get(key) or 0.0 for r in rows]
        ax.barh(names, values, left=left, label=title)
        left = [a + b for a, b in zip(left, values)]
    ax.scatter([r["process_wall_ms"] for r in rows], names, color="k", marker="|", s=200, label="process wall")
    ax.set_xlabel("ms")
    ax.set_title(f"first call, n = {n:,}: import, CUDA start-up, first call (compile included)")
    ax.invert_yaxis()
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    path = out / "compare.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def tune_progress(searches, out):
    """Each search's best so far against its evaluations (kjit tune --json rows)."""
    fig, ax = plt.subplots(figsize=(10, 5.5))
    best = None
    for name, rows in searches:
        rows = sorted(rows, key=lambda r: r["evaluation"])
        ax.step([r["evaluation"] for r in rows], [r["best_ms"] * 1000 if r["best_ms"] else None for r in rows],
                where="post", label=f"{rows[0]['strategy']} ({name})")
        best = next((r["exhaustive_best_ms"] for r in rows if r.get("exhaustive_best_ms")), best)
    if best:
        for fraction, style in ((1.0, "-"), (0.99, "--"), (0.95, ":")):
            ax.axhline(best * 1000 / fraction, color="k", linestyle=style, linewidth=0.8,
                       label="exhaustive best" if fraction == 1 else f"{fraction:.0%} of it")
    ax.set_xlabel("evaluations (points measured)")
    ax.set_ylabel("best cold kernel time so far (µs)")
    ax.set_title("kjit tune: the search's progress")
    ax.legend()
    fig.tight_layout()
    path = out / "tune_progress.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def read_results(path):
    """kjit's --json (a list of records; gzipped as .json.gz too) or --csv (a header and a row per
    record; empty: null)."""
    if path.suffix == ".csv":
        def value(text):
            if text == "":
                return None
            for convert in (int, float):
                try:
                    return convert(text)
                except ValueError:
                    pass
            return {"true": True, "false": False}.get(text, text)
        with open(path, newline="") as f:
            return [{k: value(v) for k, v in row.items()} for row in csv.DictReader(f)]
    if path.suffix == ".gz":  # how most committed results are kept
        with gzip.open(path, "rt") as f:
            return json.load(f)
    return json.loads(path.read_text())


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", type=pathlib.Path, nargs="+")
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path("."))
    args = parser.parse_args()
    files = []
    for path in args.results:
        try:
            rows = read_results(path)
        except (OSError, EOFError, json.JSONDecodeError, csv.Error, UnicodeDecodeError) as e:
            sys.exit(f"plot_results: {path}: {e}")
        is_tune = isinstance(rows, list) and rows and all(isinstance(r, dict) and "best_ms" in r for r in rows)
        if not is_tune and (not isinstance(rows, list) or not all(isinstance(r, dict) and "schema_version" in r for r in rows)):
            sys.exit(f"plot_results: {path}: not kjit results (a list of records, or kjit tune's rows)")
        files.append((path, rows, is_tune))
    args.out.mkdir(parents=True, exist_ok=True)
    if all(is_tune for _, _, is_tune in files):
        made = [tune_progress([(path.stem, rows) for path, rows, _ in files], args.out)]
        for path in made:
            print(path)
        return
    rows = [r for _, file_rows, is_tune in files if not is_tune for r in file_rows]
    if any("tool" in r for r in rows):  # bench/compare.py
        made = [compare_tools(rows, args.out)]
    else:
        made = [kernel_time(rows, args.out), time_vs_n(rows, args.out),
                stacked(rows, JIT_PHASES, "compile and load phases per variant", args.out / "jit_phases.png"),
                stacked(rows, HOST_PHASES, "where each run's time goes", args.out / "startup.png"),
                compile_tradeoff(rows, args.out), roofline(rows, args.out)]
    for path in made:
        if path:
            print(path)
    if not any(made):
        sys.exit("plot_results: nothing to plot")


if __name__ == "__main__":
    main()
