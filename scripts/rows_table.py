#!/usr/bin/env python3
"""The row-reduction results of one GPU call (scripts/gpu-check.sh rows), as tables: the odd-shape
checks, then each op at each shape and dtype — kjit fused and separate beside PyTorch and Triton,
cold medians in µs, and kjit's share of its measured copy ceiling — then fused softmax by row
cache and formula (time and bytes), with and without launch.streaming, and the launch sweep of long
rows.

    python3 scripts/rows_table.py DIR [--plot FILE.png]   (DIR holds rows_*.json and row_peers.jsonl;
                                                          any rows_*.json may be gzipped, as rows_*.json.gz)
    python3 scripts/rows_table.py DIR --markdown OP       OP's table alone, as docs/reductions.md shows it;
                                                          OP "passes": the fused softmax by row cache and sum

--plot draws the softmax table as bars: time per variant and tool, each shape and dtype a group.
"""
import glob
import gzip
import json
import os
import sys


def records(path):
    data = json.load((gzip.open if path.endswith(".gz") else open)(path, "rt"))
    return data if isinstance(data, list) else data["records"]


def located(folder, name):
    """folder/name, or folder/name.gz where only that is there."""
    path = os.path.join(folder, name)
    return path + ".gz" if not os.path.exists(path) and os.path.exists(path + ".gz") else path


def matching(folder, pattern):
    """The files of folder that match pattern, plain or gzipped."""
    return sorted(glob.glob(os.path.join(folder, pattern)) + glob.glob(os.path.join(folder, pattern + ".gz")))


def op_records(folder, op):
    """Every record of op in the call: its main sweep (rows_{op}.json), then its other sweeps —
    softmax's long rows by launch, the norms with registers capped or rows over a cluster."""
    rs = records(located(folder, f"rows_{op}.json"))
    for more in matching(folder, f"rows_{op}_*.json") + ([located(folder, "rows_cluster.json")] if op == "softmax" else []):
        if os.path.exists(more):
            rs += records(more)
    return rs


def softmax_times(folder):
    """(shape, dtype) -> {label: µs} for the softmax table and the plot: kjit's fastest fused and
    separate points and each peer."""
    times = {}
    for r in op_records(folder, "softmax"):
        key = (r["shape"], r["dtype"])
        label = "kjit " + r["fusion"]
        us = r["kernel_cold_median_ms"] * 1e3
        times.setdefault(key, {})[label] = min(us, times.get(key, {}).get(label, float("inf")))
    for line in open(os.path.join(folder, "row_peers.jsonl")):
        p = json.loads(line)
        key = (f"{p['rows']}x{p['cols']}", p["dtype"])
        if p["op"] == "softmax" and p.get("median_ms") and key in times:
            times[key][p["tool"]] = p["median_ms"] * 1e3
    return times


def plot(folder, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    times = softmax_times(folder)
    keys = sorted(times, key=lambda k: (k[1], k[0]))
    labels = ["copy", "kjit fused", "triton_row", "torch_compile", "torch_eager", "kjit separate", "unfused_eager"]
    fig, ax = plt.subplots(figsize=(11, 4.5))
    width = 0.8 / len(labels)
    for i, label in enumerate(labels):
        ax.bar([k + i * width for k in range(len(keys))], [times[key].get(label, 0) for key in keys], width, label=label)
    ax.set_xticks([k + 0.4 - width / 2 for k in range(len(keys))])
    ax.set_xticklabels([f"{shape}\n{dtype}" for shape, dtype in keys])
    ax.set_ylabel("cold median, µs (L2 flushed)")
    ax.set_title("Row softmax on an H200: kjit's fused and separate kernels beside PyTorch and Triton")
    ax.legend(ncol=4, fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


def peer_times(folder):
    """{(op, tool, dtype, "ROWSxCOLS"): median ms} of the peers run in the same call."""
    peers = {}
    peers_path = os.path.join(folder, "row_peers.jsonl")
    if os.path.exists(peers_path):
        for line in open(peers_path):
            p = json.loads(line)
            peers[(p["op"], p["tool"], p["dtype"], f"{p['rows']}x{p['cols']}")] = p.get("median_ms")
    return peers


def op_cells(folder, op):
    """One dict per shape and dtype of op: kjit's fastest fused, fast-math and separate points, each
    in µs with its share of the copy ceiling, and the peers' µs."""
    rs = op_records(folder, op)
    peers = peer_times(folder)
    # Where a sweep also varies the formula (softmax's last step) or the row cache, each
    # fusion's fastest point; the fused one's choices are listed after the table. "fused" and
    # "separate" compute exp and the rest accurately; "fast-math" is the fastest fused point
    # compiled with compile.fast_math (exp as ex2.approx, as Triton's tl.exp).
    fastest = lambda found: min(found, key=lambda r: r["kernel_cold_median_ms"], default=None)
    us = lambda r: r["kernel_cold_median_ms"] * 1e3 if r and r.get("kernel_cold_median_ms") else float("nan")
    for shape, dtype in sorted({(r["shape"], r["dtype"]) for r in rs}, key=lambda k: (k[1], k[0])):
        here = [r for r in rs if r["shape"] == shape and r["dtype"] == dtype]
        by = {fusion: fastest(r for r in here if r["fusion"] == fusion and not r.get("fast_math"))
              for fusion in ("fused", "separate")}
        fast = fastest(r for r in here if r["fusion"] == "fused" and r.get("fast_math"))
        # Time against the ceiling at the bytes a one-pass fused kernel moves: a variant that
        # reads its row again counts those reads in its bytes, not in this share.
        least = min((r["bytes_moved"] for r in here if r["fusion"] == "fused"), default=None)
        pct = lambda r: r["percent_of_ceiling"] * least / r["bytes_moved"] if r and r.get("percent_of_ceiling") else float("nan")
        yield {"shape": shape, "dtype": dtype, "records": [r for r in (*by.values(), fast) if r],
               "fused": us(by["fused"]), "fused_pct": pct(by["fused"]), "fused_point": by["fused"],
               "fast": us(fast), "fast_pct": pct(fast), "fast_point": fast, "separate": us(by["separate"]),
               "peers": {tool: ms * 1e3 for (o, tool, d, sh), ms in peers.items() if (o, d, sh) == (op, dtype, shape) and ms}}


def odd_shapes(folder):
    print("odd shapes (rows 1, 3, 1000 x cols 1, 33, 4097; every dtype; fused and separate):")
    for path in matching(folder, "rows_odd_*.json"):
        rs = records(path)
        bad = [r for r in rs if r["status"] != "PASS"]
        print(f"  {os.path.basename(path).split('.')[0][9:]:10} {len(rs) - len(bad)} of {len(rs)} pass")
        for r in bad:
            print(f"    {r['status']}: {r['sweep_point']}: {r['first_bad'] or r['error']}")


TOOLS = ("copy", "torch_eager", "torch_compile", "triton_row", "unfused_eager")


def main(folder):
    odd_shapes(folder)
    for op in ("softmax", "layernorm", "rmsnorm"):
        if not os.path.exists(located(folder, f"rows_{op}.json")):
            continue
        print(f"\n{op}: cold median µs (L2 flushed, CUDA events); kjit's % of its copy ceiling; fused vs each")
        print(f"  {'shape':12} {'dtype':9} {'fused':>8} {'% ceil':>6} {'fast-math':>9} {'% ceil':>6} {'separate':>9} {'sep/fused':>9} "
              + " ".join(f"{t:>13}" for t in TOOLS) + "  check")
        for c in op_cells(folder, op):
            f = c["fused"]
            cells = [f"{c['peers'][t]:8.1f} {c['peers'][t] / f:4.2f}x" if t in c["peers"] else f"{'-':>13}" for t in TOOLS]
            fused, fast = c["fused_point"], c["fast_point"]
            print(f"  {c['shape']:12} {c['dtype']:9} {f:8.1f} {c['fused_pct']:6.1f} {c['fast']:9.1f} {c['fast_pct']:6.1f} "
                  f"{c['separate']:9.1f} {c['separate'] / f:9.2f} " + " ".join(cells)
                  + f"  {'/'.join(r['status'] for r in c['records'])}  {fused['sweep_point'] if fused else ''}"
                  + (f"; fast-math: {fast['sweep_point']}" if fast else ""))


def markdown(folder, op):
    """op's table as docs/reductions.md shows it: the copy, kjit fused (its share of the ceiling) and
    separate, and the peers, cold medians in µs."""
    titles = {"torch_eager": "torch.softmax", "torch_compile": "torch.compile", "triton_row": "Triton, a block per row",
              "unfused_eager": "eager, 4 kernels"}
    print(f"| {op} | copy | **kjit fused** | % of ceiling | kjit separate | " + " | ".join(titles[t] for t in TOOLS[1:]) + " |")
    print("|---" * (5 + len(TOOLS) - 1) + "|")
    shown = lambda us: f"{us:.1f}" if us == us else "–"
    for c in op_cells(folder, op):
        rows, cols = c["shape"].split("x")
        print(f"| {c['dtype']} {rows} × {cols} | {shown(c['peers'].get('copy', float('nan')))} | **{shown(c['fused'])}** | "
              f"{shown(c['fused_pct'])} | {shown(c['separate'])} | "
              + " | ".join(shown(c["peers"].get(t, float("nan"))) for t in TOOLS[1:]) + " |")


def point_values(r):
    """{"launch.row_cache": "none", …} from a record's sweep point."""
    return dict(token.split("=", 1) for token in r["sweep_point"].split() if "=" in token)


def fastest_by_pass(folder):
    """{(shape, dtype): {(row cache, formula): record}}: fused softmax with exp accurate, the
    fastest point of each combination (where the sweep has more axes, such as call 7's x / s)."""
    path = located(folder, "rows_softmax.json")
    if not os.path.exists(path):
        return {}
    best = {}
    for r in records(path):
        if r["fusion"] != "fused" or r.get("fast_math"):
            continue
        values = point_values(r)
        cells = best.setdefault((r["shape"], r["dtype"]), {})
        combo = (values.get("launch.row_cache", "values"), values.get("stages[2].formula", "classic"))
        if combo not in cells or r["kernel_cold_median_ms"] < cells[combo]["kernel_cold_median_ms"]:
            cells[combo] = r
    return dict(sorted(best.items(), key=lambda k: (k[0][1], k[0][0])))


def passes(folder):
    """Fused softmax by row cache and formula: the time, and the bytes each variant asks for."""
    best = fastest_by_pass(folder)
    combos = sorted({combo for cells in best.values() for combo in cells})
    if len(combos) < 2:
        return
    print("\nfused softmax by row cache and formula (exp accurate): cold median µs / MB asked for (a row read again counts again)")
    print(f"  {'shape':12} {'dtype':9} " + " ".join(f"{c + ' ' + f:>22}" for c, f in combos))
    for (shape, dtype), cells in best.items():
        shown = [f"{r['kernel_cold_median_ms'] * 1e3:10.1f} / {r['bytes_moved'] / 1e6:6.0f} {r['status'][0]}" if (r := cells.get(combo))
                 else f"{'-':>22}" for combo in combos]
        print(f"  {shape:12} {dtype:9} " + " ".join(f"{c:>22}" for c in shown))


def markdown_passes(folder):
    """The fused softmax by where the row waits and by sum, as docs/reductions.md shows it: µs / MB
    asked for, the fastest of each row in bold."""
    columns = [("values", "classic", "registers (`values`), classic"), ("values", "online", "registers, online"),
               ("none", "classic", "streamed (`none`), classic"), ("none", "online", "streamed, online"),
               ("shared", "classic", "`shared`, classic"), ("shared", "online", "`shared`, online")]
    print("| fused softmax | " + " | ".join(title for _, _, title in columns) + " |")
    print("|---" * (len(columns) + 1) + "|")
    for (shape, dtype), cells in fastest_by_pass(folder).items():
        found = [cells.get((cache, formula)) for cache, formula, _ in columns]
        fastest = min((r["kernel_cold_median_ms"] for r in found if r), default=None)
        shown = [("–" if not r else (f"**{r['kernel_cold_median_ms'] * 1e3:.1f}**" if r["kernel_cold_median_ms"] == fastest
                                     else f"{r['kernel_cold_median_ms'] * 1e3:.1f}") + f" / {r['bytes_moved'] / 1e6:.0f}") for r in found]
        rows_, cols = shape.split("x")
        print(f"| {dtype} {rows_} × {cols} | " + " | ".join(shown) + " |")


def streaming(folder):
    """Each op's fastest fused point (exp accurate) with and without launch.streaming."""
    shown = False
    for op in ("softmax", "layernorm", "rmsnorm"):
        path = located(folder, f"rows_{op}.json")
        if not os.path.exists(path):
            continue
        rs = [r for r in records(path) if r["fusion"] == "fused" and not r.get("fast_math") and r.get("kernel_cold_median_ms")]
        on = lambda r: point_values(r).get("launch.streaming") == "true"
        if not any(on(r) for r in rs):
            continue
        if not shown:
            print("\nlaunch.streaming (evict-first loads of the row and stores of the result), fastest fused point "
                  "with accurate exp: cold median µs (% of ceiling)")
            shown = True
        for shape, dtype in sorted({(r["shape"], r["dtype"]) for r in rs}, key=lambda k: (k[1], k[0])):
            here = [r for r in rs if r["shape"] == shape and r["dtype"] == dtype]
            least = min(r["bytes_moved"] for r in here)
            best = [min((r for r in here if on(r) == flag), key=lambda r: r["kernel_cold_median_ms"], default=None)
                    for flag in (False, True)]
            if None in best:
                continue
            cells = [f"{r['kernel_cold_median_ms'] * 1e3:6.1f} ({r['percent_of_ceiling'] * least / r['bytes_moved']:5.1f})" for r in best]
            print(f"  {op:10} {shape:12} {dtype:9} off {cells[0]}  on {cells[1]}  on/off "
                  f"{best[1]['kernel_cold_median_ms'] / best[0]['kernel_cold_median_ms']:5.3f}  {best[1]['sweep_point']}")


def clusters(folder):
    path = located(folder, "rows_cluster.json")
    if not os.path.exists(path):
        return
    print("\nsoftmax 1024 x 32768 by launch: the variant, registers, blocks per SM, cold median µs, MB asked for")
    for r in records(path):
        print(f"  {r['variant']:62} {r['registers']:>4} regs {r['blocks_per_sm']:3} /SM "
              f"{r['kernel_cold_median_ms'] * 1e3:8.1f} {r['bytes_moved'] / 1e6:6.0f}  {r['status']}")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[2] == "--markdown":
        markdown_passes(sys.argv[1]) if sys.argv[3] == "passes" else markdown(sys.argv[1], sys.argv[3])
        sys.exit()
    main(sys.argv[1])
    passes(sys.argv[1])
    streaming(sys.argv[1])
    clusters(sys.argv[1])
    if len(sys.argv) == 4 and sys.argv[2] == "--plot":
        plot(sys.argv[1], sys.argv[3])
