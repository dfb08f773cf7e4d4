#!/usr/bin/env bash
# Issue 43, the attention family's wgmma rung, third call: the second call's wgmmas were serialized
# by the compiler (ptxas C7520: a wgmma in a branch some turns took); now the first and last turns
# are written out on their own. The FlashAttention-3 grid first (each consumer free, and three
# consumers at head dim 64, at a few points), then verification at odd shapes, the score
# modifiers and the shipped configs. No peers: the device time left (320 s) did not allow them;
# the second call's ran the same hour.
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
  timeout ${LIMIT:-60} "$kjit" run configs/attention.json --skip-ceiling --set "shape=[$rows,$dim]" \
    --set "inputs.k.shape=[$kv_rows,$dim]" --set "inputs.v.shape=[$kv_rows,$dim]" \
    --set "stages[0].batch=$batch" --set "stages[0].heads=$heads" --set "stages[0].kv_heads=$kv" \
    --set "stages[0].score=\"$score\"" "$@" --json "$OUT/logs/$name.json" > "$OUT/logs/$name.txt" 2>&1
  local rc=$?
  echo "$name: exit $rc $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); r=r[0] if isinstance(r,list) else r; print(r.get("status"), "mismatches", r.get("mismatches"), "of", r.get("compared"), "cold_ms", r.get("kernel_cold_median_ms"), "tflops", round(r.get("tflops") or 0), "regs", r.get("registers"), "first_bad", r.get("first_bad"), r.get("error") or "")' "$OUT/logs/$name.json" 2>/dev/null || tail -3 "$OUT/logs/$name.txt")"
  return $rc
}
echo "== smoke"
ok=1
for dim in 128 64 256; do
  LIMIT=30 point "smoke_d$dim" 1000 $dim 2 8 2 x --set measure.repeat=3 --set measure.warmup=1 || ok=0
  LIMIT=30 point "smoke_d${dim}_causal" 1000 $dim 2 8 2 "col > row ? -inf : x" --set measure.repeat=3 --set measure.warmup=1 || ok=0
done
[ $ok = 1 ] || exit 1
echo "== the grid, at the defaults (ping-pong); each consumer free and three consumers at a few points"
for p in 1024:128 2048:128 4096:128 8192:128 16384:128 1024:64 4096:64 16384:64; do
  seq=${p%:*}; dim=${p#*:}; batch=$((16384 / seq)); heads=$((2048 / dim))
  point "grid_s${seq}_d${dim}_full" $seq $dim $batch $heads $heads x
  point "grid_s${seq}_d${dim}_causal" $seq $dim $batch $heads $heads "col > row ? -inf : x"
  if [ $seq = 8192 ] || [ $seq = 4096 -a $dim = 64 ]; then
    point "free_s${seq}_d${dim}_full" $seq $dim $batch $heads $heads x --set 'launch.schedule="free"'
    point "free_s${seq}_d${dim}_causal" $seq $dim $batch $heads $heads "col > row ? -inf : x" --set 'launch.schedule="free"'
  fi
  if [ $dim = 64 ]; then
    point "three_s${seq}_d${dim}_full" $seq $dim $batch $heads $heads x --set launch.consumers=3
    point "three_s${seq}_d${dim}_causal" $seq $dim $batch $heads $heads "col > row ? -inf : x" --set launch.consumers=3
  fi
done 2>&1 | tee "$OUT/grid.txt"
point grid_s4096_d256_full 4096 256 4 8 8 x | tee -a "$OUT/grid.txt"
(cd "$OUT/logs" && tar czf ../data.tgz .)
echo "== odd shapes (verification)"
for seq in 1 17 1000 4097; do for dim in 64 96 128 256; do for kv in 8 1; do
  for score in x "col > row ? -inf : x"; do
    tag=$([ "$score" = x ] && echo full || echo causal)
    LIMIT=30 point "odd_s${seq}_d${dim}_kv${kv}_${tag}" $seq $dim 2 8 $kv "$score" --set measure.repeat=3 --set measure.warmup=1
  done; done; done; done > "$OUT/odd.txt" 2>&1
for dim in 64 128; do for score in x "col > row ? -inf : x"; do
  tag=$([ "$score" = x ] && echo full || echo causal)
  LIMIT=30 point "odd_f16_s4097_d${dim}_kv2_${tag}" 4097 $dim 2 8 2 "$score" --set 'dtype="float16"' --set measure.repeat=3 --set measure.warmup=1
  LIMIT=30 point "odd_free_s4097_d${dim}_kv2_${tag}" 4097 $dim 2 8 2 "$score" --set 'launch.schedule="free"' --set measure.repeat=3 --set measure.warmup=1
  LIMIT=30 point "odd_three_s1000_d64_kv1_${tag}" 1000 64 2 8 1 "$score" --set launch.consumers=3 --set measure.repeat=3 --set measure.warmup=1
done; done >> "$OUT/odd.txt" 2>&1
echo "odd shapes failing: $(grep -vc 'exit 0' "$OUT/odd.txt") of $(wc -l < "$OUT/odd.txt")"; grep -v "exit 0" "$OUT/odd.txt" | head -20
(cd "$OUT/logs" && tar czf ../data.tgz .)
echo "== score modifiers at 8192:128"
{
point mod_window 8192 128 2 16 16 "col > row || row - col >= 1024 ? -inf : x"
point mod_softcap 8192 128 2 16 16 "30 * tanh(x / 30)"
point mod_softcap_approx 8192 128 2 16 16 "30 * tanh(x / 30)" --set 'compile.tanh="approx"'
point mod_alibi 8192 128 2 16 16 "x + exp2(-8.0 * (head + 1) / 16) * (col - row)"
} 2>&1 | tee "$OUT/modifiers.txt"
echo "== shipped configs"
for c in attention attention_causal attention_gated attention_documents; do
  timeout 120 "$kjit" run configs/$c.json --skip-ceiling --json "$OUT/logs/config_$c.json" > "$OUT/logs/config_$c.txt" 2>&1
  echo "$c: exit $? $(grep -E 'TFLOP' "$OUT/logs/config_$c.txt" | head -2 | tr '\n' ' ')"
done
# kjit's records now, before the peers: a call cut short still brings them back
(cd "$OUT/logs" && tar czf ../data.tgz .)
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
rm -rf "$OUT/logs"
