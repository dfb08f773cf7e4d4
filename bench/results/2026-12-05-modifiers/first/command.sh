#!/usr/bin/env bash
# Issue 43, one short call (little device time was left): the fused kernel's score modifiers with
# positions as floats (new) at 8k × 128, beside the unmasked kernel and a score that changes x
# without positions; odd shapes verified with ALiBi and a window on both rungs, and on the separate
# kernels (their scores now stored two at a time).
source bench/attention_call.sh  # (the build, $kjit, point and pack)
echo "== odd shapes: ALiBi and a window on both rungs, the separate kernels"
{
for rung in wgmma mma; do for seq in 17 1000; do
  LIMIT=30 point "odd_alibi_${rung}_s$seq" $seq 64 2 8 2 "x + exp2(-8.0 * (head + 1) / 8) * (col - row)" --set "launch.rung=\"$rung\"" --set measure.repeat=3 --set measure.warmup=1
  LIMIT=30 point "odd_window_${rung}_s$seq" $seq 128 2 8 4 "col > row || row - col >= 300 ? -inf : x" --set "launch.rung=\"$rung\"" --set measure.repeat=3 --set measure.warmup=1
done; done
for seq in 17 1000; do for dim in 64 96; do
  LIMIT=30 point "odd_separate_s${seq}_d${dim}_causal" $seq $dim 2 8 2 "col > row ? -inf : x" --set 'fusion="separate"' --set measure.repeat=3 --set measure.warmup=1
done; done
} 2>&1 | tee "$OUT/odd.txt"
pack
echo "== score modifiers at 8192:128"
{
point mod_none 8192 128 2 16 16 x --set measure.repeat=10
point mod_shift 8192 128 2 16 16 "x + 0.0625" --set measure.repeat=10
point mod_alibi 8192 128 2 16 16 "x + exp2(-8.0 * (head + 1) / 16) * (col - row)" --set measure.repeat=10
point separate_s1024_d128_full 1024 128 16 16 16 x --set 'fusion="separate"' --set measure.repeat=10
} 2>&1 | tee "$OUT/modifiers.txt"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
pack && rm -rf "$OUT/logs"
