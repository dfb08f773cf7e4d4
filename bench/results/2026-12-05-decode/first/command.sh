#!/usr/bin/env bash
# Issue 43 first, then issue 40 (little device time was left: one short call). Attention: the
# fused kernel's score modifiers with positions as floats (new) at 8k × 128, beside the unmasked
# kernel and a score that changes x without positions, and odd shapes verified with them; the
# separate kernels (their scores now stored two at a time) with each kernel's time and bytes from
# CUPTI, and odd shapes verified on them again. Issue 40: where the decode steps (M = 1, 16, 64,
# N = K = 4096, + bias) and GPT-2's down-projection (4096 × 768 × 3072 + bias) spend their time at
# the defaults (CUPTI's memory counters). No ncu beside cuBLAS and no tune: no device time for
# them.
source bench/attention_call.sh  # (the build, $kjit, point and pack)
shape_of() {  # NAME → the --set lines of its product + bias
  case $1 in
    decode_m1) m=1 n=4096 k=4096;; decode_m16) m=16 n=4096 k=4096;; decode_m64) m=64 n=4096 k=4096;;
    gpt2_down) m=4096 n=768 k=3072;;
  esac
  sets=(--set "shape=[$m,$k]" --set "inputs.W.shape=[$k,$n]"
        --set 'stages=[{"op":"matmul","input":"x_in","by":"W"},{"op":"bias","by":"b"}]')
}
echo "== attention, score modifiers at 8192:128 with positions as floats"
{
point mod_none 8192 128 2 16 16 x
point mod_shift 8192 128 2 16 16 "x + 0.0625"
point mod_alibi 8192 128 2 16 16 "x + exp2(-8.0 * (head + 1) / 16) * (col - row)"
point mod_window 8192 128 2 16 16 "col > row || row - col >= 1024 ? -inf : x"
point mod_causal 8192 128 2 16 16 "col > row ? -inf : x"
for rung in wgmma mma; do for seq in 17 1000 4097; do
  LIMIT=30 point "odd_alibi_${rung}_s$seq" $seq 64 2 8 2 "x + exp2(-8.0 * (head + 1) / 8) * (col - row)" --set "launch.rung=\"$rung\"" --set measure.repeat=3 --set measure.warmup=1
  LIMIT=30 point "odd_window_${rung}_s$seq" $seq 128 2 8 4 "col > row || row - col >= 300 ? -inf : x" --set "launch.rung=\"$rung\"" --set measure.repeat=3 --set measure.warmup=1
done; done
} 2>&1 | tee "$OUT/modifiers.txt"
pack
echo "== attention, separate: each kernel's time (CUPTI)"
for p in 1024:128 4096:64; do
  seq=${p%:*}; dim=${p#*:}; batch=$((16384 / seq)); heads=$((2048 / dim))
  point "separate_s${seq}_d${dim}_full" $seq $dim $batch $heads $heads x --set 'fusion="separate"' --metrics=memory
  grep -E "attention_(scores|softmax|values)|duration|DRAM" "$OUT/logs/separate_s${seq}_d${dim}_full.txt" | head -12
done
for seq in 17 1000; do for dim in 64 96; do for tag in full causal; do
  case $tag in full) score=x;; causal) score="col > row ? -inf : x";; esac
  LIMIT=30 point "odd_separate_s${seq}_d${dim}_kv2_$tag" $seq $dim 2 8 2 "$score" --set 'fusion="separate"' --set measure.repeat=3 --set measure.warmup=1
done; done; done
pack
for name in decode_m1 decode_m16 decode_m64 gpt2_down; do
  shape_of $name
  echo "== $name ($m × $n × $k)"
  timeout 60 "$kjit" run configs/mlp_layer.json --skip-ceiling "${sets[@]}" --metrics=memory --json "$OUT/logs/$name.json" > "$OUT/logs/$name.txt" 2>&1
  grep -E "PASS|FAIL|policy|kernel |cold|DRAM|dram" "$OUT/logs/$name.txt" | head -12
  pack
done
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
pack && rm -rf "$OUT/logs"
