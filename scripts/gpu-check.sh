#!/usr/bin/env bash
# The GPU job, for the lent H200 machines (../shared/device/README.md): each PART writes its logs
# and records to $OUT (default ./gpu-results); parts run in the order given.
#   build       configure and build with the staged header-only deps in .deps (and the Python
#               module where nanobind imports)
#   tests       every CTest label but format (CI runs it), gpu included (the python label writes
#               the executed notebook, seed.ipynb), then the gpu tests again for their figures
#   gemm-odd    the GEMM family verified at M, N, K of 1, 17, 1000, 4097 (all 64 combinations), every
#               dtype on its rung, fused and separate; bfloat16 and float16 on simt too
#   gemm-tune   the mma rung's launch space (tiles, warps, pipeline depth) at 8192³, exhaustively
#   gemm        the GEMM ladder at 4096³, 8192³ and 8192 × 4096 × 4096 (GEMM_SHAPES), each rung alone,
#               the epilogue fused (tanh, GELU) and separate, wgmma's ping-pong and cluster
#               variants (GEMM_VARIANTS), 2 rounds (mma at gemm-tune's best
#               launch where that part ran); the peers (cuBLAS, cuBLASLt's
#               GELU epilogue, eager addmm + activation, torch.compile, Triton) at the same shapes
#               (bench/peers/gemm_peers.py; GEMM_PEERS=0 skips them); summed by scripts/gemm_table.py
#   python      bench/python_calls.py: kjit's kernels called from Python beside CuPy, Triton,
#               PyTorch and Numba; a warm session's run; import + first run against `kjit run`
#   runs        every shipped config in a fresh process, empty cache then warm; the default at larger n
#   sweeps      configs/sweep_hidden_layer.json: cold on GPU 0 (with --trace, checked and summed
#               per span name by scripts/trace_summary.py), warm on GPU 0, warm with host data made
#               in line (--host-threads 0) and warm again, compared point by point by
#               scripts/sweep_diff.py, and warm on all GPUs
#   watch       kjit run --watch timed from outside by scripts/watch_latency.py: cached and
#               compiling edits, a bad edit and its fix, Ctrl-C
#   first-call  kjit first-call on the default config
#   peers       bench/compare.py: kjit beside Numba, CuPy and PyTorch, cold and warm, n = 1M and 16M
#   launch      configs/sweep_launch.json on all GPUs
#   ops         the stage-language configs' sweeps: every activation x formula x dtype at 2^24,
#               bias_gelu, softplus (naive FAILs), leaky_relu_expr (one compile for three alphas)
#   abuse       what must fail cleanly on a GPU: an n too large for the machine (exit 1, one line)
#   trust       the measurement conditions: the default config in 5 fresh processes and at 2^24 and
#               2^28 (NVML clocks, temperature, power, limits; the cold loop's noise and sample
#               count), then a cold sweep_hidden_layer whose per-point noise and samples are tabled
#   compile     compile.method nvrtc against nvjitlink: 7 cold compiles each (no cache), and the
#               seed kernel's cold time with each at 10^6, 2^24 and 2^28, alternated, 3 rounds
#   effort      configs/sweep_compile_effort.json on one thread of compiles, and its plot
#   baseline    build the previous release, unpacked in .baseline (git archive of it), for seedtime
#   shipped     every shipped config's kernel time (its base point; the seed configs also at 2^24
#               and 2^28), this build against .baseline, alternated, 3 rounds
#   transpose   configs/transpose.json's sweep, odd shapes (with maps before and after) in every
#               dtype and tile, and x.clone() / x.t().contiguous() at the same shapes
#               (bench/peers/transpose_peers.py)
#   rows        row reductions: every row config (softmax, layer norm, RMS norm, row sum) verified at
#               odd shapes (rows 1, 3, 1000 × cols 1, 33, 4097; 3 × 70001 in clusters) in every
#               dtype, fused and separate, each row cache, blocks that loop over rows, softmax's sum
#               classic and online; then sweep_softmax, sweep_softmax_cluster, layer norm
#               and RMS norm at the issue's shapes, and the same
#               operations in PyTorch and Triton (bench/peers/row_peers.py); summed by
#               scripts/rows_table.py
#   causal      configs/causal_softmax.json verified at odd shapes (rows 1, 3, 1000 × cols 1, 33,
#               4097) in float32 and bfloat16, classic and online sums, each row cache; then its
#               shipped shapes beside configs/softmax.json at the same shapes (3 rounds, alternated)
#               and the masked softmax of PyTorch (eager, compile) and Triton (bench/peers/row_peers.py);
#               summed by scripts/causal_table.py
#   mask-cost   what the causal softmax's first map costs where it is not free (bfloat16, short
#               rows): x, x * scale, the mask alone, both; at blocks of 64, 128 and 256
#   mask-launch the causal and the unmasked softmax, bfloat16, 32768 × 1024, over launches (row mapping, vector
#               width, row cache, streaming), 2 rounds: is there a launch where the mask is free?
#   data        a hidden layer on a greyscale image made, saved and reloaded with NumPy (.npy),
#               saved back with --save --save-reference and compared in NumPy
#   seed        configs/seed_vectorize.json's sweep (the accepted answers' changes, with per-call
#               copies and without), kjit first-call on it, and bench/compare.py at n = 10^6
#   tune        configs/tune_softmax.json and tune_layernorm.json tuned exhaustively; the first again
#               (all from the tuning database), and launch "tuned" against --write-best's config,
#               alternated, 3 rounds; then every strategy replayed on both (5 seeds)
#   tune-table  issue 25's table: softmax, layer norm (float32, bfloat16) and RMS norm (bfloat16) at
#               4096², 32768 × 1024 and 1024 × 32768, and softmax float32 at 1 × 2^20, 777 × 3001 and
#               200000 × 8: the family's launch space exhaustively and the default launch beside it;
#               TABLE_SPECS="softmax:float32 …" picks the ops; summed by scripts/tune_table.py
#   causal-tuned  configs/causal_softmax.json and softmax.json, bfloat16, 32768 × 1024, each tuned
#               over the row family's launch space, then default and "tuned" launches of both,
#               alternated, 3 rounds: what the mask costs at each one's best launch
#   tune-auto   the default launch against the best point of each cell's exhaustive tune
#               (bench/results/2026-12-02-h200-tune/table), alternated, 2 rounds; softmax at
#               1 × 2^20 tuned exhaustively first (before the rule, "auto" refused that row)
set -uo pipefail
out=${OUT:-$PWD/gpu-results}
mkdir -p "$out"
build=build-gpu
kjit=$PWD/$build/kjit
export KJIT_CACHE_DIR=/tmp/kjit-gpu-cache
{ date -u +%Y-%m-%dT%H:%M:%SZ; nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv; nproc; } > "$out/env.txt" 2>&1
status=0

run() {  # run LABEL ARGS...: one fresh `kjit run` process; its table and wall time go to runs.log
    local label=$1; shift
    local start=$EPOCHREALTIME
    "$kjit" run "$@" --json "$records/$label.json" >> "$out/runs.log" 2>&1 || status=1
    local end=$EPOCHREALTIME
    echo "== $label: process wall $(awk "BEGIN { print $end - $start }") s" >> "$out/runs.log"
}

sweep() {  # sweep LABEL ARGS...
    local label=$1; shift
    echo "== kjit sweep $* ($label)" >> "$out/sweeps.log"
    local start=$EPOCHREALTIME
    "$kjit" sweep configs/sweep_hidden_layer.json --quiet "$@" --json "$out/sweep_$label.json" >> "$out/sweeps.log" 2>&1 || status=1
    echo "== $label: process wall $(awk "BEGIN { print $EPOCHREALTIME - $start }") s" >> "$out/sweeps.log"
}

for part in "$@"; do
    echo "---- $part ($(date -u +%T))"
    case $part in
    build)
        # The Python module too, where nanobind imports (carried as a wheel: ../shared/device/README.md).
        python=(); python3 -c "import nanobind" 2> /dev/null && python=(-DKJIT_PYTHON=ON "-DPython_EXECUTABLE=$(command -v python3)")
        if [ ${#python[@]} -gt 0 ] && ! cmake -S . -B "$build" -G Ninja -DCMAKE_PREFIX_PATH="$PWD/.deps/usr" "${python[@]}" > /tmp/python-configure.log 2>&1; then
            echo "build: the Python module cannot be configured here; building without it:"; tail -5 /tmp/python-configure.log
            python=(-DKJIT_PYTHON=OFF)
        fi
        { cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/.deps/usr" "${python[@]}" &&
          cmake --build "$build" -j "$(nproc)"; } > /tmp/build.log 2>&1 || { tail -40 /tmp/build.log; exit 1; } ;;
    tests)
        # (format: the goldens' clang-format check, a CI test; this machine has no clang-format.)
        KJIT_NOTEBOOK_OUT="$out/seed.ipynb" ctest --test-dir "$build" -LE "gpu|format" -j 4 --output-on-failure -V > "$out/tests.log" 2>&1 || status=1
        # Verbose, once: the gpu tests' messages (clocks, noise) go to the log too.
        ctest --test-dir "$build" -L gpu -V >> "$out/tests.log" 2>&1 || status=1
        tail -4 "$out/tests.log" ;;
    runs)
        records=$(mktemp -d)
        "$kjit" devices > "$out/runs.log" 2>&1
        for cfg in configs/*.json; do
            name=$(basename "$cfg" .json)
            "$kjit" cache clear > /dev/null
            run "$name-cold" "$cfg"
            run "$name-warm" "$cfg"
        done
        for n in 16777216 268435456; do
            run "hidden_layer-n$n" --set n=$n
            run "hidden_layer-separate-n$n" --set n=$n --set fusion=separate
            run "hidden_layer-f64-n$n" --set n=$n --set dtype=float64
        done
        "$kjit" merge "$records"/*.json --json "$out/runs.json" > /dev/null ;;
    sweeps)
        "$kjit" cache clear > /dev/null
        sweep cold --devices 0 --trace "$out/sweep_trace.json"
        sweep warm --devices 0
        sweep inline --devices 0 --host-threads 0
        sweep warm2 --devices 0
        sweep all --devices all
        python3 scripts/trace_summary.py "$out/sweep_trace.json" >> "$out/sweeps.log" 2>&1 || status=1
        for pair in "inline warm" "warm warm2"; do  # host data made ahead vs in line; run-to-run spread
            read -r a b <<< "$pair"
            python3 scripts/sweep_diff.py "$out/sweep_$a.json" "$out/sweep_$b.json" >> "$out/sweeps.log" 2>&1 || status=1
        done
        grep -E "^(==|[0-9]+ points)" "$out/sweeps.log"; tail -24 "$out/sweeps.log" ;;
    watch)
        python3 scripts/watch_latency.py "$kjit" configs/hidden_layer.json 7 > "$out/watch.log" 2>&1 || status=1
        tail -5 "$out/watch.log" ;;
    first-call)
        "$kjit" first-call --repeat 5 --json "$out/first_call.json" > "$out/first_call.log" 2>&1 || status=1
        tail -8 "$out/first_call.log" ;;
    peers)
        python3 bench/compare.py --kjit "$kjit" --out "$out" > "$out/compare.log" 2>&1 || status=1
        tail -32 "$out/compare.log" ;;
    launch)
        "$kjit" sweep configs/sweep_launch.json --devices all --quiet --json "$out/launch.json" > "$out/launch.log" 2>&1 || status=1
        head -12 "$out/launch.log"; tail -2 "$out/launch.log" ;;
    ops)
        for cfg in activations bias_gelu softplus leaky_relu_expr; do
            echo "== kjit sweep configs/$cfg.json" >> "$out/ops.log"
            "$kjit" sweep "configs/$cfg.json" --quiet --json "$out/ops_$cfg.json" >> "$out/ops.log" 2>&1
            echo "== exit $?" >> "$out/ops.log"
        done
        grep -E "^(==|[0-9]+ points)" "$out/ops.log" ;;
    abuse)
        { "$kjit" run --set n=1000000000000; echo "exit $?"; } > "$out/abuse.log" 2>&1
        { "$kjit" run --set n=60000000000 --set dtype=float16; echo "exit $?"; } >> "$out/abuse.log" 2>&1
        cat "$out/abuse.log" ;;
    trust)
        records=$(mktemp -d)
        for i in 1 2 3 4 5; do "$kjit" run --skip-ceiling --json "$records/default-$i.json" >> "$out/trust.log" 2>&1 || status=1; done
        for n in 16777216 268435456; do "$kjit" run --set n=$n --json "$records/n$n.json" >> "$out/trust.log" 2>&1 || status=1; done
        "$kjit" cache clear > /dev/null
        sweep trust --devices 0
        "$kjit" merge "$records"/*.json "$out/sweep_trust.json" --json "$out/trust.json" > /dev/null
        python3 - "$out/trust.json" >> "$out/trust.log" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
print(f"{'point':58} {'cold median us':>14} {'noise %':>8} {'samples':>8} {'SM MHz':>11} {'mem MHz':>9} {'C':>7} {'W':>9} warnings")
for r in rows:
    label = r["sweep_point"] or r["variant"]
    pair = lambda k, f="{:.0f}": "/".join("-" if r.get(f"{k}_{w}") is None else f.format(r[f"{k}_{w}"]) for w in ("before", "after"))
    print(f"{label[:58]:58} {r['kernel_cold_median_ms'] * 1e3:14.2f} {r['kernel_cold_noise'] * 100:8.3f} {r['kernel_cold_count']:8d} "
          f"{pair('sm_clock_mhz'):>11} {pair('memory_clock_mhz'):>9} {pair('temperature_c'):>7} {pair('power_w'):>9} {r['warnings']}")
PY
        grep -E "^(==|[0-9]+ points)" "$out/sweeps.log"; tail -60 "$out/trust.log" | cut -c1-160 | tail -12 ;;
    compile)
        records=$(mktemp -d)
        for i in 1 2 3 4 5 6 7; do
            for m in nvrtc nvjitlink; do
                "$kjit" compile --no-cache --set compile.method=$m --json "$records/compile-$m-$i.json" > /dev/null 2>> "$out/compile.log" || status=1
            done
        done
        for round in 1 2 3; do
            for m in nvrtc nvjitlink; do
                for n in 1000000 16777216 268435456; do
                    "$kjit" run --skip-ceiling --set n=$n --set compile.method=$m --json "$records/run-$m-$n-$round.json" > /dev/null 2>> "$out/compile.log" || status=1
                done
            done
        done
        "$kjit" merge "$records"/*.json --json "$out/compile.json" > /dev/null
        python3 - "$out/compile.json" >> "$out/compile.log" <<'PY'
import json, statistics, sys
rows = json.load(open(sys.argv[1]))
med = lambda v: statistics.median(v) if v else float("nan")
print("cold compile of the seed kernel (kjit compile --no-cache), median of 7:")
for m in ("nvrtc", "nvjitlink"):
    c = [r for r in rows if r["command"] == "compile" and r["compile_method"] == m]
    total = [r["nvrtc_ms"] + r["ptx_to_cubin_ms"] for r in c]
    fe = [r["nvrtc_front_end_ms"] for r in c if r["nvrtc_front_end_ms"] is not None]
    print(f"  {m:10} total {med(total):6.1f} ms (nvrtc {med([r['nvrtc_ms'] for r in c]):5.1f}, ptxas {med([r['ptx_to_cubin_ms'] for r in c]):5.1f}, "
          f"front end {med(fe):5.1f}) registers {c[0]['registers']} cubin {c[0]['cubin_bytes']} B  all: {' '.join(f'{t:.0f}' for t in total)}")
print("seed kernel cold median, us (3 rounds each):")
for n in (1000000, 16777216, 268435456):
    t = {m: [r["kernel_cold_median_ms"] * 1e3 for r in rows if r["command"] == "run" and r["n"] == n and r["compile_method"] == m] for m in ("nvrtc", "nvjitlink")}
    print(f"  n={n:10}  nvrtc {' '.join(f'{x:.2f}' for x in t['nvrtc'])}  nvjitlink {' '.join(f'{x:.2f}' for x in t['nvjitlink'])}  ratio {med(t['nvrtc']) / med(t['nvjitlink']):.3f}")
PY
        tail -8 "$out/compile.log" ;;
    effort)
        "$kjit" cache clear > /dev/null
        "$kjit" sweep configs/sweep_compile_effort.json --jobs 1 --quiet --json "$out/effort.json" > "$out/effort.log" 2>&1 || status=1
        python3 scripts/plot_results.py "$out/effort.json" --out "$out" >> "$out/effort.log" 2>&1 || status=1
        cat "$out/effort.log" ;;
    baseline)
        { cmake -S .baseline -B build-gpu/baseline -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/.deps/usr" &&
          cmake --build build-gpu/baseline -j "$(nproc)" --target kjit; } > /tmp/baseline.log 2>&1 || { tail -20 /tmp/baseline.log; exit 1; } ;;
    shipped)
        records=$(mktemp -d)
        for round in 1 2 3; do
            for build in build-gpu/baseline "$build"; do
                tag=$([ "$build" = build-gpu/baseline ] && echo old || echo new)
                for cfg in configs/*.json; do
                    name=$(basename "$cfg" .json)
                    [ "$tag" = old ] && [ ! -f ".baseline/$cfg" ] && continue  # new in this build
                    "$PWD/$build/kjit" run "$cfg" --skip-ceiling --json "$records/$tag-$name-$round.json" > /dev/null 2>> "$out/shipped-errors.log" || status=1
                done
                for n in 16777216 268435456; do
                    "$PWD/$build/kjit" run --set n=$n --skip-ceiling --json "$records/$tag-hidden_layer-n$n-$round.json" > /dev/null 2>> "$out/shipped-errors.log" || status=1
                    "$PWD/$build/kjit" run configs/seed_vectorize.json --set n=$n --skip-ceiling --json "$records/$tag-seed_vectorize-n$n-$round.json" > /dev/null 2>> "$out/shipped-errors.log" || status=1
                done
            done
        done
        python3 - "$records" > "$out/shipped.log" <<'PY'
import glob, json, os, statistics, sys
rows = {}
for path in sorted(glob.glob(sys.argv[1] + "/*.json")):
    tag, rest = os.path.basename(path)[:-5].split("-", 1)
    name = rest.rsplit("-", 1)[0]
    data = json.load(open(path))
    record = data[0] if isinstance(data, list) else data["records"][0]
    rows.setdefault(name, {}).setdefault(tag, []).append(record["kernel_cold_median_ms"] * 1e3)
print(f"{'config':34} {'old cold median us (3 runs)':30} {'new':30} new/old")
for name, tags in rows.items():
    old, new = statistics.median(tags.get("old", [float("nan")])), statistics.median(tags.get("new", [float("nan")]))
    show = lambda v: " ".join(f"{x:.2f}" for x in v)
    print(f"{name:34} {show(tags.get('old', [])):30} {show(tags.get('new', [])):30} {new / old:.3f}")
PY
        tar -czf "$out/shipped-records.tar.gz" -C "$records" .
        cat "$out/shipped.log" ;;
    transpose)
        "$kjit" sweep configs/transpose.json --quiet --json "$out/transpose.json" > "$out/transpose.log" 2>&1 || status=1
        echo "== the tile's layout: padded or swizzled, 16-bit types and floats, vectors of 2-8" >> "$out/transpose.log"
        "$kjit" sweep configs/transpose.json --set 'sweep={"shape":[[4096,4096],[8192,8192],[16384,16384]],"dtype":["bfloat16","float16","float32"],"launch.layout":["padded","swizzled"],"launch.vector_width":[2,4,8],"launch.tile":[64],"launch.block":[128,256]}' \
            --quiet --json "$out/transpose_layouts.json" >> "$out/transpose.log" 2>&1 || status=1
        "$kjit" sweep configs/transpose.json --set launch.layout=padded --set launch.padding=0 --quiet --json "$out/transpose_unpadded.json" >> "$out/transpose.log" 2>&1 || status=1
        odd='"shape":[[1,1],[3,4097],[1000,33],[4097,3],[33,1000],[1,70001],[12,1028],[1000,36]],"dtype":["float32","bfloat16","float16","float64"],"launch.tile":[16,32,64],"launch.vector_width":[1,"auto"]'
        echo "== odd shapes, both layouts" >> "$out/transpose.log"
        "$kjit" sweep configs/transpose.json --set "sweep={$odd,\"launch.layout\":[\"padded\",\"swizzled\"]}" --set measure.repeat=3 --set measure.max_ms=5 --quiet \
            --json "$out/transpose_odd.json" >> "$out/transpose.log" 2>&1 || status=1
        echo "== odd shapes, maps before and after the transpose (padded), before only and after only (both layouts)" >> "$out/transpose.log"
        inputs='inputs={"a":{"fill":"uniform","low":-1,"high":1},"b":{"fill":"normal"}}'
        maps=0
        for stages in '[{"op":"map","expr":"x * alpha_1 + b","input":"a"},{"op":"transpose"},{"op":"activate","fn":"tanh"},{"op":"map","expr":"x - b"}]' \
                      '[{"op":"map","expr":"x * alpha_1 + b","input":"a"},{"op":"transpose"}]' \
                      '[{"op":"transpose","input":"a"},{"op":"activate","fn":"tanh"},{"op":"map","expr":"x * alpha_1 - b"}]'; do
            layouts='"padded","swizzled"'
            case $stages in *'"transpose"},{'*) layouts='"padded"' ;; esac
            "$kjit" sweep configs/transpose.json --set "sweep={$odd,\"launch.layout\":[$layouts]}" --set measure.repeat=3 --set measure.max_ms=5 --quiet \
                --set "$inputs" --set 'params={"alpha_1":2.5}' --set "stages=$stages" \
                --json "$out/transpose_maps.json" >> "$out/transpose.log" 2>&1 || status=1
            gzip -f "$out/transpose_maps.json" && mv "$out/transpose_maps.json.gz" "$out/transpose_maps_$((++maps)).json.gz"
        done
        (cd bench/peers && python3 transpose_peers.py) > "$out/transpose_peers.jsonl" 2>> "$out/transpose.log" || status=1
        tail -3 "$out/transpose.log" ;;
    rows)
        shapes='[1,1],[1,33],[1,4097],[3,1],[3,33],[3,4097],[1000,1],[1000,33],[1000,4097]'
        each='"dtype":["float32","bfloat16","float16","float64"],"fusion":["fused","separate"]'
        for cfg in softmax layernorm rmsnorm row_sum; do
            sums=''
            [ $cfg = softmax ] && sums=',"stages[2].formula":["classic","online"]'
            echo "== odd shapes: $cfg" >> "$out/rows.log"
            "$kjit" sweep "configs/$cfg.json" \
                --set "sweep={\"shape\":[$shapes,[3,70001]],$each,\"launch.row_cache\":[\"values\",\"inputs\",\"none\"],\"launch.streaming\":[false,true]$sums}" \
                --set measure.repeat=3 --set measure.max_ms=5 --quiet \
                --json "$out/rows_odd_$cfg.json" >> "$out/rows.log" 2>&1 || status=1
            # Shared memory does not hold a row of 70001 floats: the other shapes.
            echo "== odd shapes, row_cache shared: $cfg" >> "$out/rows.log"
            "$kjit" sweep "configs/$cfg.json" --set "sweep={\"shape\":[$shapes],$each,\"launch.streaming\":[false,true],\"launch.cluster\":[1,2]$sums}" --set launch.row_cache=shared \
                --set measure.repeat=3 --set measure.max_ms=5 --quiet \
                --json "$out/rows_odd_shared_$cfg.json" >> "$out/rows.log" 2>&1 || status=1
            # Blocks that loop over the rows, 7 of them or as many as are resident, with the next
            # row in flight in registers or shared memory, or none.
            echo "== odd shapes, blocks that loop over rows: $cfg" >> "$out/rows.log"
            loops='"launch":[{"grid":7},{"grid":"resident","row_cache":"inputs"},{"grid":"resident","row_cache":"none"},{"grid":7,"row_cache":"shared"}]'
            "$kjit" sweep "configs/$cfg.json" --set "sweep={\"shape\":[$shapes],$each,$loops$sums}" \
                --set measure.repeat=3 --set measure.max_ms=5 --quiet \
                --json "$out/rows_odd_loops_$cfg.json" >> "$out/rows.log" 2>&1 || status=1
        done
        echo "== sweep_softmax" >> "$out/rows.log"
        "$kjit" sweep configs/sweep_softmax.json --quiet --json "$out/rows_softmax.json" >> "$out/rows.log" 2>&1 || status=1
        echo "== sweep_softmax_cluster" >> "$out/rows.log"
        "$kjit" sweep configs/sweep_softmax_cluster.json --quiet --json "$out/rows_cluster.json" >> "$out/rows.log" 2>&1 || status=1
        norms='sweep={"shape":[[4096,4096],[32768,1024],[1024,32768]],"dtype":["float32","bfloat16"],"launch.row_cache":["values","inputs","none","shared"],"launch.block":["auto",256,512],"compile.fast_math":[false,true],"launch.streaming":[false,true]}'
        # The row out of registers, with registers capped for 2-4 blocks per SM (launch bounds).
        bounds='sweep={"shape":[[4096,4096],[32768,1024],[1024,32768]],"dtype":["float32","bfloat16"],"launch.row_cache":["none","shared"],"launch.block":[256,512],"launch.min_blocks_per_sm":[2,3,4],"launch.streaming":[false,true]}'
        # Each block of a cluster holding its share of the row in shared memory.
        shared_clusters='sweep={"shape":[[4096,4096],[1024,32768]],"dtype":["float32","bfloat16"],"launch.row_cache":["shared"],"launch.cluster":[2,4],"launch.block":[256,512,1024],"launch.streaming":[false,true]}'
        for cfg in layernorm rmsnorm; do
            echo "== $cfg" >> "$out/rows.log"
            "$kjit" sweep "configs/$cfg.json" --set "$norms" --quiet --json "$out/rows_$cfg.json" >> "$out/rows.log" 2>&1 || status=1
            echo "== $cfg, registers capped" >> "$out/rows.log"
            "$kjit" sweep "configs/$cfg.json" --set "$bounds" --quiet --json "$out/rows_${cfg}_bounds.json" >> "$out/rows.log" 2>&1 || status=1
            echo "== $cfg, shared rows over a cluster" >> "$out/rows.log"
            "$kjit" sweep "configs/$cfg.json" --set "$shared_clusters" --quiet --json "$out/rows_${cfg}_cluster.json" >> "$out/rows.log" 2>&1 || status=1
        done
        python3 bench/peers/row_peers.py > "$out/row_peers.jsonl" 2>> "$out/rows.log" || status=1
        python3 scripts/rows_table.py "$out" >> "$out/rows.log" 2>&1 || status=1
        gzip -9 "$out"/rows_*.json  # the records: a tenth of the size, and rows_table.py reads them so
        grep -E "^(==|[0-9]+ points)" "$out/rows.log"; tail -40 "$out/rows.log" ;;
    causal)
        shapes='[1,1],[1,33],[1,4097],[3,1],[3,33],[3,4097],[1000,1],[1000,33],[1000,4097]'
        echo "== odd shapes: causal_softmax" >> "$out/causal.log"
        "$kjit" sweep configs/causal_softmax.json \
            --set "sweep={\"shape\":[$shapes],\"dtype\":[\"float32\",\"bfloat16\"],\"stages[3].formula\":[\"classic\",\"online\"],\"launch.row_cache\":[\"values\",\"none\",\"shared\"]}" \
            --set measure.repeat=3 --set measure.max_ms=5 --quiet --json "$out/causal_odd.json" >> "$out/causal.log" 2>&1 || status=1
        same_shapes='sweep={"shape":[[4096,4096],[32768,1024]],"dtype":["float32","bfloat16"]}'
        for round in 1 2 3; do
            for cfg in causal_softmax softmax; do
                echo "== $cfg, round $round" >> "$out/causal.log"
                "$kjit" sweep "configs/$cfg.json" --set "$same_shapes" --quiet \
                    --json "$out/causal_${cfg}_$round.json" >> "$out/causal.log" 2>&1 || status=1
            done
        done
        python3 bench/peers/row_peers.py --ops softmax,causal_softmax --shapes 4096x4096,32768x1024 \
            > "$out/causal_peers.jsonl" 2>> "$out/causal.log" || status=1
        python3 scripts/causal_table.py "$out" >> "$out/causal.log" 2>&1 || status=1
        grep -E "^(==|[0-9]+ points)" "$out/causal.log"; tail -24 "$out/causal.log" ;;
    mask-cost)
        maps='["x","x * scale","col > row ? -inf : x","col > row ? -inf : x * scale"]'
        for round in 1 2 3; do
            "$kjit" sweep configs/causal_softmax.json --set "sweep={\"shape\":[[32768,1024],[4096,4096]],\"dtype\":[\"bfloat16\"],\"stages[0].expr\":$maps,\"launch.block\":[64,128,256]}" \
                --quiet --json "$out/mask_cost_$round.json" >> "$out/mask_cost.log" 2>&1 || status=1
        done
        tail -28 "$out/mask_cost.log" ;;
    mask-launch)
        space='"shape":[[32768,1024]],"dtype":["bfloat16"],"launch.row_mapping":["block","warp"],"launch.vector_width":[4,8],"launch.row_cache":["values","inputs"],"launch.streaming":[false,true]'
        for round in 1 2; do
            for cfg in causal_softmax softmax; do
                "$kjit" sweep "configs/$cfg.json" --set "sweep={$space}" --quiet \
                    --json "$out/mask_launch_${cfg}_$round.json" >> "$out/mask_launch.log" 2>&1 || status=1
            done
        done
        grep -E "points|FAIL|error" "$out/mask_launch.log" | tail -8 ;;
    data)
        mkdir -p "$out/data"
        python3 - "$out/data" <<'PY' > "$out/data.log" 2>&1 || status=1
import sys, numpy as np
d = sys.argv[1]
# A greyscale image: rings and a gradient, with sensor noise, rounded to 8 bits.
y, x = np.mgrid[0:1080, 0:1920]
image = 127.5 + 90 * np.sin(np.hypot(x - 960, y - 540) / 40) * np.exp(-np.hypot(x - 960, y - 540) / 900) + (x - 960) / 30
image += np.random.default_rng(7).normal(0, 6, image.shape)
np.save(f"{d}/greyscales.npy", np.clip(np.rint(image), 0, 255).astype(np.uint8))
np.save(f"{d}/weights.npy", np.random.default_rng(8).normal(0.5, 0.1, image.shape).astype(np.float32))
PY
        cat > "$out/data/hidden_layer_image.json" <<'JSON'
{"name": "hidden_layer_image",
 "inputs": {"greyscales": {"fill": "file", "path": "greyscales.npy"},
            "weights": {"fill": "file", "path": "weights.npy"}},
 "stages": [{"op": "normalize", "input": "greyscales", "scale": 255}, {"op": "weigh", "by": "weights"},
            {"op": "activate", "fn": "tanh"}]}
JSON
        "$kjit" run "$out/data/hidden_layer_image.json" --save "$out/data/saved" --save-reference \
            --json "$out/data/run.json" >> "$out/data.log" 2>&1 || status=1
        python3 - "$out/data" <<'PY' >> "$out/data.log" 2>&1 || status=1
import glob, sys, numpy as np
d = sys.argv[1]
g = np.load(f"{d}/greyscales.npy").astype(np.float64)
w = np.load(f"{d}/weights.npy").astype(np.float64)
out = np.load(glob.glob(f"{d}/saved/*[0-9].npy")[0])
ref = np.load(glob.glob(f"{d}/saved/*.reference.npy")[0])
mine = np.tanh(g / 255 * w)
print("numpy: kjit's output", out.dtype, out.shape, "max |out - numpy float64| =", np.abs(out - mine).max(),
      "; kjit's reference vs numpy: max", np.abs(ref - mine).max())
PY
        rm -rf "$out"/data/*.npy "$out"/data/saved; tail -30 "$out/data.log" ;;
    tune)
        for cfg in tune_softmax tune_layernorm; do
            "$kjit" tune "configs/$cfg.json" --strategy exhaustive --quiet --json "$out/tune_$cfg.json" > "$out/tune_$cfg.log" 2>&1 || status=1
        done
        start=$EPOCHREALTIME
        "$kjit" tune configs/tune_softmax.json --strategy exhaustive --quiet --write-best /tmp/best_softmax.json > "$out/tune_again.log" 2>&1 || status=1
        echo "== a second tune: process wall $(awk "BEGIN { print $EPOCHREALTIME - $start }") s" >> "$out/tune_again.log"
        for round in 1 2 3; do
            "$kjit" run configs/tune_softmax.json --set launch=tuned --skip-ceiling > /tmp/tuned.log 2>&1 || status=1
            grep -E "launch |cold:" /tmp/tuned.log | sed "s/^/tuned $round: /" >> "$out/tune_tuned.log"
            "$kjit" run /tmp/best_softmax.json --skip-ceiling > /tmp/best.log 2>&1 || status=1
            grep -E "cold:" /tmp/best.log | sed "s/^/written $round: /" >> "$out/tune_tuned.log"
        done
        for cfg in tune_softmax tune_layernorm; do
            for strategy in anneal genetic local random; do
                echo "== $cfg $strategy" >> "$out/tune_replay.log"
                "$kjit" tune "configs/$cfg.json" --replay "$out/tune_$cfg.json" --strategy $strategy --seeds 5 | tail -1 >> "$out/tune_replay.log" 2>&1 || status=1
            done
        done
        tail -4 "$out/tune_again.log"; cat "$out/tune_tuned.log" "$out/tune_replay.log" ;;
    tune-table)
        mkdir -p "$out/table"
        cells=()
        for spec in ${TABLE_SPECS:-softmax:float32 softmax:bfloat16 layernorm:float32 layernorm:bfloat16 rmsnorm:bfloat16}; do
            for shape in 4096,4096 32768,1024 1024,32768; do cells+=("$spec:$shape"); done
        done
        [ -z "${TABLE_SPECS:-}" ] || [ "${TABLE_UNTUNED:-}" = 1 ] && for shape in 1,1048576 777,3001 200000,8; do cells+=("softmax:float32:$shape"); done
        for cell in "${cells[@]}"; do
            IFS=: read -r cfg dtype shape <<< "$cell"
            label=${cfg}_${dtype}_${shape/,/x}
            "$kjit" tune "configs/$cfg.json" --set dtype=$dtype --set "shape=[$shape]" --strategy exhaustive --quiet \
                --json "$out/table/$label.tune.json" > "$out/table/$label.log" 2>&1 || status=1
            "$kjit" run "configs/$cfg.json" --set dtype=$dtype --set "shape=[$shape]" --skip-ceiling \
                --json "$out/table/$label.default.json" >> "$out/table/$label.log" 2>&1 || status=1
        done
        python3 scripts/tune_table.py "$out/table" | tee "$out/tune_table.md" ;;
    causal-tuned)
        cell=(--set dtype=bfloat16 --set "shape=[32768,1024]")
        for cfg in causal_softmax softmax; do
            "$kjit" tune "configs/$cfg.json" "${cell[@]}" --strategy exhaustive --quiet --json "$out/causal_tune_$cfg.json" \
                > "$out/causal_tune_$cfg.log" 2>&1 || status=1
        done
        for round in 1 2 3; do
            for cfg in causal_softmax softmax; do
                for launch in default tuned; do
                    extra=(); [ $launch = tuned ] && extra=(--set launch=tuned)
                    "$kjit" run "configs/$cfg.json" "${cell[@]}" "${extra[@]}" --skip-ceiling > /tmp/one.log 2>&1 || status=1
                    echo "$cfg $launch $round $(grep -E 'cold:' /tmp/one.log | awk '{print $6, $7}') $(grep -E '^  launch ' /tmp/one.log | cut -c1-160)" >> "$out/causal_tuned.log"
                done
            done
        done
        cat "$out/causal_tuned.log"; grep -h "^  best" "$out"/causal_tune_*.log ;;
    tune-auto)
        mkdir -p "$out/auto"
        "$kjit" tune configs/softmax.json --set "shape=[1,1048576]" --strategy exhaustive --quiet \
            --json "$out/auto/softmax_float32_1x1048576.tune.json" > "$out/auto/tune_1x1048576.log" 2>&1 || status=1
        gzip -kf "$out/auto/softmax_float32_1x1048576.tune.json"
        for tuned in bench/results/2026-12-02-h200-tune/table/${AUTO_CELLS:-*}.tune.json.gz "$out/auto/softmax_float32_1x1048576.tune.json.gz"; do
            label=$(basename "$tuned" .tune.json.gz)
            IFS=_ read -r cfg dtype shape <<< "$label"
            mapfile -t best < <(python3 scripts/tune_table.py --best-sets "$tuned")
            for round in 1 2; do
                for which in default best; do
                    extra=(); [ $which = best ] && extra=("${best[@]}")
                    "$kjit" run "configs/$cfg.json" --set dtype=$dtype --set "shape=[${shape/x/,}]" "${extra[@]}" --skip-ceiling \
                        --json "$out/auto/$label.$which.$round.json" > /dev/null 2>> "$out/auto/errors.log" || status=1
                done
            done
        done
        python3 scripts/tune_table.py --auto "$out/auto" | tee "$out/tune_auto.md" ;;
    gemm-odd)
        # Every rung at odd shapes: M, N, K of 1, 17, 1000 and 4097 in all 64 combinations; each
        # dtype with its auto rung (float32 and float64 simt, bfloat16 and float16 mma), fused and
        # separate; bfloat16 and float16 on simt, and on wgmma fused and separate, too.
        mkdir -p "$out/gemm_odd"
        for m in 1 17 1000 4097; do for n in 1 17 1000 4097; do for k in 1 17 1000 4097; do
            shape=(--set "shape=[$m,$k]" --set "inputs.W.shape=[$k,$n]" --set measure.repeat=3 --set measure.max_ms=5 --set measure.warmup=1 --quiet)
            echo "== $m x $n x $k" >> "$out/gemm_odd.log"
            "$kjit" sweep configs/mlp_layer.json "${shape[@]}" --set 'sweep={"dtype":["float32","float64","bfloat16","float16"],"fusion":["fused","separate"],"launch.rung":["auto"]}' \
                --json "$out/gemm_odd/${m}x${n}x${k}.json" >> "$out/gemm_odd.log" 2>&1 || status=1
            "$kjit" sweep configs/mlp_layer.json "${shape[@]}" --set 'sweep={"dtype":["bfloat16","float16"],"launch.rung":["simt"]}' \
                --json "$out/gemm_odd/${m}x${n}x${k}.simt.json" >> "$out/gemm_odd.log" 2>&1 || status=1
            timeout 300 "$kjit" sweep configs/mlp_layer.json "${shape[@]}" \
                --set 'sweep={"dtype":["bfloat16","float16"],"fusion":["fused","separate"],"launch.rung":["wgmma"]}' \
                --json "$out/gemm_odd/${m}x${n}x${k}.wgmma.json" >> "$out/gemm_odd.log" 2>&1 || status=1
        done; done; done
        grep -cE " PASS$" "$out/gemm_odd.log"; grep -E "FAIL|error" "$out/gemm_odd.log" | head -20 ;;
    gemm-tune)
        # The mma rung's launch space at 8192³, the matmul alone, exhaustively; its best point is
        # what the gemm part then runs the mma variants with. Around the auto launch (the best of
        # an earlier, wider space: bench/results/2026-12-02-gemm/second), or GEMM_TUNE_AXES.
        gemm_axes='{"launch.tile_n":[128,256],"launch.warps_n":[2,4],"launch.stages":[3,4,5,6],"launch.group_m":[4,8,16]}'
        "$kjit" tune configs/mlp_layer.json --set "shape=[8192,8192]" --set "inputs.W.shape=[8192,8192]" \
            --set 'stages=[{"op":"matmul","input":"x_in","by":"W"}]' --set measure.max_ms=100 \
            --set "tune={\"axes\":${GEMM_TUNE_AXES:-$gemm_axes}}" \
            --strategy exhaustive --json "$out/gemm_tune.json" > "$out/gemm_tune.log" 2>&1 || status=1
        tail -30 "$out/gemm_tune.log" ;;
    gemm)
        # The ladder at the issue's shapes (M x N x K), each rung alone and with its epilogue fused
        # or separate, then the peers at the same shapes (bench/peers/gemm_peers.py).
        alone='stages=[{"op":"matmul","input":"x_in","by":"W"}]'
        gelu='stages[2]={"op":"activate","fn":"gelu","formula":"tanh"}'
        bias='stages=[{"op":"matmul","input":"x_in","by":"W"},{"op":"bias","by":"b"}]'
        pingpong=(--set launch.schedule=pingpong --set launch.tile_n=128 --set launch.stages=4)
        mkdir -p "$out/gemm"
        tuned=()  # the gemm-tune part's best launch, where it ran
        [ -f "$out/gemm_tune.json" ] && mapfile -t tuned < <(python3 scripts/tune_table.py --best-sets "$out/gemm_tune.json")
        for shape in ${GEMM_SHAPES:-4096x4096x4096 8192x8192x8192 8192x4096x4096}; do
            IFS=x read -r m n k <<< "$shape"
            sized=(--set "shape=[$m,$k]" --set "inputs.W.shape=[$k,$n]" --skip-ceiling)
            for round in ${GEMM_ROUNDS:-1 2}; do
                for variant in ${GEMM_VARIANTS:-simt_f32 simt_bf16 mma mma_tanh mma_gelu mma_gelu_separate wgmma wgmma_tanh wgmma_gelu wgmma_gelu_separate wgmma_pingpong_gelu wgmma_cluster}; do
                    case $variant in
                        simt_f32) extra=(--set dtype=float32 --set "$alone") ;;
                        simt_bf16) extra=(--set launch.rung=simt --set "$alone") ;;
                        mma) extra=(--set "$alone") ;;
                        mma_tanh) extra=() ;;
                        mma_gelu) extra=(--set "$gelu") ;;
                        mma_gelu_separate) extra=(--set "$gelu" --set fusion=separate) ;;
                        wgmma) extra=(--set launch.rung=wgmma --set "$alone") ;;
                        wgmma_tanh) extra=(--set launch.rung=wgmma) ;;
                        wgmma_gelu) extra=(--set launch.rung=wgmma --set "$gelu") ;;
                        wgmma_gelu_separate) extra=(--set launch.rung=wgmma --set "$gelu" --set fusion=separate) ;;
                        wgmma_bias) extra=(--set launch.rung=wgmma --set "$bias") ;;
                        wgmma_tanh_fast) extra=(--set launch.rung=wgmma --set compile.fast_math=true) ;;
                        wgmma_gelu_fast) extra=(--set launch.rung=wgmma --set "$gelu" --set compile.fast_math=true) ;;
                        wgmma_pingpong) extra=(--set launch.rung=wgmma --set "$alone" "${pingpong[@]}") ;;
                        wgmma_pingpong_gelu) extra=(--set launch.rung=wgmma --set "$gelu" "${pingpong[@]}") ;;
                        wgmma_pingpong_gelu_fast) extra=(--set launch.rung=wgmma --set "$gelu" "${pingpong[@]}" --set compile.fast_math=true) ;;
                        wgmma_cluster) extra=(--set launch.rung=wgmma --set "$alone" --set launch.cluster_m=2) ;;
                    esac
                    [[ $variant == mma* ]] && extra+=("${tuned[@]}")
                    timeout 120 "$kjit" run configs/mlp_layer.json "${sized[@]}" "${extra[@]}" ${GEMM_SET:-} \
                        --json "$out/gemm/$shape.$variant.$round.json" >> "$out/gemm.log" 2>&1 || status=1
                done
            done
        done
        [ "${GEMM_PEERS:-1}" = 0 ] && { python3 scripts/gemm_table.py "$out" | tee "$out/gemm_table.md"; continue; }
        python3 bench/peers/gemm_peers.py --shapes "$(echo ${GEMM_SHAPES:-4096x4096x4096 8192x8192x8192 8192x4096x4096} | tr ' ' ,)" \
            --compile-mode "${GEMM_COMPILE_MODE:-max-autotune-no-cudagraphs}" \
            > "$out/gemm_peers.jsonl" 2>> "$out/gemm.log" || status=1
        python3 scripts/gemm_table.py "$out" | tee "$out/gemm_table.md" ;;
    python)
        PYTHONPATH="$PWD/$build/python${PYTHONPATH:+:$PYTHONPATH}" python3 bench/python_calls.py --kjit "$kjit" --out "$out" \
            > "$out/python_calls.log" 2>&1 || status=1
        cat "$out/python_calls.log" ;;
    seed)
        "$kjit" sweep configs/seed_vectorize.json --quiet --json "$out/seed_sweep.json" > "$out/seed.log" 2>&1 || status=1
        "$kjit" run configs/seed_vectorize.json --set measure.transfers=per_call >> "$out/seed.log" 2>&1 || status=1
        "$kjit" first-call configs/seed_vectorize.json --repeat 5 --json "$out/seed_first_call.json" >> "$out/seed.log" 2>&1 || status=1
        python3 bench/compare.py --kjit "$kjit" --n 1000000 --out "$out" > "$out/compare.log" 2>&1 || status=1
        tail -60 "$out/seed.log"; tail -32 "$out/compare.log" ;;
    *) echo "unknown part $part"; exit 2 ;;
    esac
done
exit $status
