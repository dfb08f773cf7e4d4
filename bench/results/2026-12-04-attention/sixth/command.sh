#!/usr/bin/env bash
# Issue 43, attention's sixth call: ALiBi again after col − row is converted from an int (it was
# widened to 64 bits first), beside a constant slope (no exp2 of the head) and the unmasked and
# causal kernels, 8k × 128, batch 2, 16 heads, two rounds; a few odd shapes verified.
set -uo pipefail
export OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > "$OUT/env.txt"
{ cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/.deps/usr" -DKJIT_PYTHON=OFF &&
  cmake --build build-gpu --target kjit -j "$(nproc)"; } > "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
kjit=$PWD/build-gpu/kjit
export KJIT_CACHE_DIR=/tmp/kjit-cache
# point NAME SEQ DIM BATCH HEADS KV_HEADS SCORE [more --set]: kjit at that point, a JSON summary line
point() {
  local name=$1 seq=$2 dim=$3 batch=$4 heads=$5 kv=$6 score=$7; shift 7
  local rows=$((batch * heads * seq)) kv_rows=$((batch * kv * seq))
  timeout 120 "$kjit" run configs/attention.json --skip-ceiling --set "shape=[$rows,$dim]" \
    --set "inputs.k.shape=[$kv_rows,$dim]" --set "inputs.v.shape=[$kv_rows,$dim]" \
    --set "stages[0].batch=$batch" --set "stages[0].heads=$heads" --set "stages[0].kv_heads=$kv" \
    --set "stages[0].score=\"$score\"" "$@" --json "$OUT/logs/$name.json" > "$OUT/logs/$name.txt" 2>&1
  local rc=$?
  echo "$name: exit $rc $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); r=r[0] if isinstance(r,list) else r; print(r.get("status"), "mismatches", r.get("mismatches"), "of", r.get("compared"), "cold_ms", r.get("kernel_cold_median_ms"), "tflops", round(r.get("tflops") or 0), "first_bad", r.get("first_bad"), r.get("error") or "")' "$OUT/logs/$name.json" 2>/dev/null || tail -2 "$OUT/logs/$name.txt")"
}
alibi16="x + exp2(-8.0 * (head + 1) / 16) * (col - row)"
for seq in 17 1000; do
  point "alibi_s${seq}" $seq 64 2 8 2 "x + exp2(-8.0 * (head + 1) / 8) * (col - row)" --set measure.repeat=3 --set measure.warmup=1
  point "causal_alibi_s${seq}" $seq 128 2 8 8 "col > row ? -inf : x + exp2(-8.0 * (head + 1) / 8) * (col - row)" --set measure.repeat=3 --set measure.warmup=1
done 2>&1 | tee "$OUT/odd.txt"
for round in 1 2; do
  point "r${round}_full" 8192 128 2 16 16 x
  point "r${round}_alibi" 8192 128 2 16 16 "$alibi16"
  point "r${round}_constant_slope" 8192 128 2 16 16 "x + 0.0625 * (col - row)"
  point "r${round}_causal" 8192 128 2 16 16 "col > row ? -inf : x"
  point "r${round}_causal_alibi" 8192 128 2 16 16 "col > row ? -inf : $alibi16"
done 2>&1 | tee "$OUT/grid.txt"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
cd "$OUT/logs" && tar czf ../data.tgz . && cd "$OUT" && rm -rf logs
