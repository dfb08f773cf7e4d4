#!/usr/bin/env bash
# Issue 43, the attention family's second call: warps that take 2 pieces of 16 queries (each tile of K
# and V read from shared memory serves both) and masks that skip whole tiles found from their
# corners. Verification at odd shapes with one and two pieces a warp; the tiles swept at
# the grid's sequences 2k and 8k, head dims 64 and 128, causal and not; score modifiers.
set -uo pipefail
export OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > "$OUT/env.txt"
{ cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/.deps/usr" -DKJIT_PYTHON=OFF &&
  cmake --build build-gpu --target kjit -j "$(nproc)"; } > "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
kjit=$PWD/build-gpu/kjit
export KJIT_CACHE_DIR=/tmp/kjit-cache
# point NAME SEQ DIM BATCH HEADS KV_HEADS SCORE [more --set]: kjit at that point, a JSON record
point() {
  local name=$1 seq=$2 dim=$3 batch=$4 heads=$5 kv=$6 score=$7; shift 7
  local rows=$((batch * heads * seq)) kv_rows=$((batch * kv * seq))
  timeout 120 "$kjit" run configs/attention.json --skip-ceiling --set "shape=[$rows,$dim]" \
    --set "inputs.k.shape=[$kv_rows,$dim]" --set "inputs.v.shape=[$kv_rows,$dim]" \
    --set "stages[0].batch=$batch" --set "stages[0].heads=$heads" --set "stages[0].kv_heads=$kv" \
    --set "stages[0].score=\"$score\"" "$@" --json "$OUT/logs/$name.json" > "$OUT/logs/$name.txt" 2>&1
  local rc=$?
  echo "$name: exit $rc $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); r=r[0] if isinstance(r,list) else r; print(r.get("status"), "mismatches", r.get("mismatches"), "of", r.get("compared"), "cold_ms", r.get("kernel_cold_median_ms"), "tflops", round(r.get("tflops") or 0), "regs", r.get("registers"), "first_bad", r.get("first_bad"), r.get("error") or "")' "$OUT/logs/$name.json" 2>/dev/null || tail -2 "$OUT/logs/$name.txt")"
}
echo "== odd shapes (verification), one and two pieces a warp"
for seq in 17 1000 4097; do for dim in 64 96 128; do for kv in 8 1; do
  for score in x "col > row ? -inf : x"; do for tiles in "128 8 64" "128 4 32"; do
    set -- $tiles; tag=$([ "$score" = x ] && echo full || echo causal)
    point "odd_s${seq}_d${dim}_kv${kv}_${tag}_bm$1w$2bn$3" $seq $dim 2 8 $kv "$score" --set measure.repeat=3 --set measure.warmup=1 \
      --set launch.block_m=$1 --set launch.warps=$2 --set launch.block_n=$3
  done; done; done; done; done 2>&1 | tee "$OUT/odd.txt" | grep -v "exit 0" | head -40
echo "odd shapes failing: $(grep -vc 'exit 0' "$OUT/odd.txt") of $(wc -l < "$OUT/odd.txt")"
echo "== tiles at the grid"
for p in 2048:128 8192:128 2048:64 8192:64; do
  seq=${p%:*}; dim=${p#*:}; batch=$((16384 / seq)); heads=$((2048 / dim))
  if [ $dim = 128 ]; then configs=("128 8 64" "128 4 32" "128 8 128" "64 4 64"); else configs=("128 8 64" "128 4 64" "128 8 128" "64 4 128"); fi
  for c in "${configs[@]}"; do set -- $c
    point "grid_s${seq}_d${dim}_full_bm$1w$2bn$3" $seq $dim $batch $heads $heads x --set launch.block_m=$1 --set launch.warps=$2 --set launch.block_n=$3
    point "grid_s${seq}_d${dim}_causal_bm$1w$2bn$3" $seq $dim $batch $heads $heads "col > row ? -inf : x" --set launch.block_m=$1 --set launch.warps=$2 --set launch.block_n=$3
  done
done 2>&1 | tee "$OUT/grid.txt"
echo "== score modifiers at 8192:128, the defaults"
point mod_window 8192 128 2 16 16 "col > row || row - col >= 1024 ? -inf : x"
point mod_softcap 8192 128 2 16 16 "30 * tanh(x / 30)"
point mod_none 8192 128 2 16 16 x
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
cd "$OUT/logs" && tar czf ../data.tgz . && cd "$OUT" && rm -rf logs
