#!/usr/bin/env bash
# The eighth call had persistent blocks ahead at head dim 64 without a mask (1k 385 → 416, 2k 470
# → 500, 4k 507 → 528) and behind at 128 but for 16k: the longer sequences at head dim 64, and
# 8k and 16k × 128 again, two rounds, alternated.
source bench/attention_call.sh
{
for round in 1 2; do
  for p in 8192:64 16384:64 8192:128 16384:128; do
    seq=${p%:*}; dim=${p#*:}; batch=$((16384 / seq)); heads=$((2048 / dim))
    point "r${round}_items_s${seq}_d${dim}_full" $seq $dim $batch $heads $heads x
    point "r${round}_persistent_s${seq}_d${dim}_full" $seq $dim $batch $heads $heads x --set launch.persistent=true
  done
done
pack
} 2>&1 | tee "$OUT/points.txt"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
pack
