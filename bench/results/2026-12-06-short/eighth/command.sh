#!/usr/bin/env bash
# The seventh call's Nsight Compute had cuDNN's kernel at 1k × 128 persistent (132 blocks of 384)
# and 13 % faster than kjit's block an item. A persistent block now has the TMA unit fetch the next
# item's queries into L2 as it starts an item (their copy to shared memory still waits for the
# item's last scores). Persistent against a block an item, two rounds, without a mask.
source bench/attention_call.sh
{
for round in 1 2; do
  for p in 1024:128 2048:128 4096:128 16384:128 1024:64 2048:64 4096:64; do
    seq=${p%:*}; dim=${p#*:}; batch=$((16384 / seq)); heads=$((2048 / dim))
    point "r${round}_items_s${seq}_d${dim}_full" $seq $dim $batch $heads $heads x
    point "r${round}_persistent_s${seq}_d${dim}_full" $seq $dim $batch $heads $heads x --set launch.persistent=true
  done
done
pack
} 2>&1 | tee "$OUT/points.txt"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
pack
