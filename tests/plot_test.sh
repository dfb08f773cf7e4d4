#!/usr/bin/env bash
# The plotting script on real kjit output made here with no GPU (a compile-only sweep): it must
# draw the compile phases, and refuse a file that is not kjit results. Then scripts/rows_table.py
# on committed H200 results: its table and plot.
# usage: plot_test.sh KJIT PYTHON SOURCE_DIR WORK_DIR   (PYTHON empty: skipped, exit 77)
set -euo pipefail
kjit=$1 python=$2 source=$3 work=$4
if [ -z "$python" ]; then echo "plot test skipped: no python3 with matplotlib (Debian: python3-matplotlib)"; exit 77; fi
rm -rf "$work" && mkdir -p "$work"
"$kjit" sweep "$source/configs/sweep_hidden_layer.json" --compile-only --quiet --cache-dir "$work/cache" \
    --set 'sweep={"dtype": ["float32", "float64"]}' --json "$work/results.json" > /dev/null
"$python" "$source/scripts/plot_results.py" "$work/results.json" --out "$work/png"
test -s "$work/png/jit_phases.png"
test -s "$work/png/startup.png"
# The same results as CSV.
"$kjit" merge "$work/results.json" --csv "$work/results.csv" > /dev/null
rm "$work/png/jit_phases.png"
"$python" "$source/scripts/plot_results.py" "$work/results.csv" --out "$work/png"
test -s "$work/png/jit_phases.png"
if "$python" "$source/scripts/plot_results.py" "$source/configs/hidden_layer.json" --out "$work/png" 2> "$work/err"; then
    echo "expected a refusal"; exit 1
fi
grep -q "not kjit results" "$work/err"
# The roofline of the GEMM ladder, from committed (gzipped) H200 results: every rung is placed.
"$python" "$source/scripts/plot_results.py" "$source/bench/results/2026-12-04-why/third/gemm_ladder.json.gz" \
    --out "$work/roofline" > "$work/roofline.txt"
grep -q "roofline.png" "$work/roofline.txt"
test -s "$work/roofline/roofline.png"
# The row-reduction table and plot, from committed H200 results.
rows="$source/bench/results/2026-12-01-h200-rows/call7"
"$python" "$source/scripts/rows_table.py" "$rows" --plot "$work/png/rows.png" > "$work/rows.txt"
grep -q "softmax    160 of 160 pass" "$work/rows.txt"
grep -qE "^  4096x4096    float32 +36\.2 +96\.2" "$work/rows.txt"
test -s "$work/png/rows.png"
# With launch.streaming in the sweeps: the table of each op with and without it.
"$python" "$source/scripts/rows_table.py" "$source/bench/results/2026-12-01-h200-streaming/call1" > "$work/streaming.txt"
grep -qE "^  layernorm  1024x32768   float32   off   87\.1 \( 79\.4\)  on   83\.1 \( 83\.3\)" "$work/streaming.txt"
# kjit tune --replay on the H200's exhaustive softmax tune: its summary, and the progress plot of
# two strategies beside the exhaustive best.
tuned="$source/bench/results/2026-12-02-h200-tune/tune_softmax.exhaustive.json"
for strategy in anneal random; do
    "$kjit" tune "$source/configs/tune_softmax.json" --replay "$tuned" --strategy $strategy --json "$work/$strategy.json" > "$work/$strategy.txt"
done
grep -q "^  reached   100 % of the exhaustive best (38.5 µs)" "$work/anneal.txt"
grep -q "^  space     384 points, 320 allowed" "$work/anneal.txt"
"$python" "$source/scripts/plot_results.py" "$work/anneal.json" "$work/random.json" --out "$work/png"
test -s "$work/png/tune_progress.png"
# The GEMM ladder's table and plot, from committed H200 results.
gemm="$source/bench/results/2026-12-03-wgmma/fifth"
"$python" "$source/scripts/gemm_table.py" "$gemm" --plot "$work/png/gemm.png" > "$work/gemm.txt"
grep -q "odd shapes: 896 of 896 PASS" "$work/gemm.txt"
grep -qE "^\| 4096x4096x4096 \| wgmma \| 0\.1807 \| 760\.6 \|" "$work/gemm.txt"
test -s "$work/png/gemm.png"
echo "plot test passed"
