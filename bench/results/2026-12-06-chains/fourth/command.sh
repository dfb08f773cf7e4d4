#!/usr/bin/env bash
# Issue 43 on the H200: why 16k × 128 (633 TFLOP/s) ran below 8k × 128 (683) at the defaults in
# the third call: the wgmma rung's launches around the defaults at both, two rounds.
source bench/attention_call.sh
for round in 1 2; do
  for seq in 8192 16384; do
    batch=$((16384 / seq))
    point "r${round}_s${seq}_default" $seq 128 $batch 16 16 x
    point "r${round}_s${seq}_persistent" $seq 128 $batch 16 16 x --set launch.persistent=true
    point "r${round}_s${seq}_buffers2" $seq 128 $batch 16 16 x --set launch.buffers=2
    point "r${round}_s${seq}_buffers4" $seq 128 $batch 16 16 x --set launch.buffers=4
    point "r${round}_s${seq}_serial" $seq 128 $batch 16 16 x --set 'launch.schedule="serial"'
  done
  point "r${round}_s16384_b2h8" 16384 128 2 8 8 x
done 2>&1 | tee "$OUT/launches.txt"
grep -h "variant" "$OUT"/logs/r1_*.txt | sort | uniq -c > "$OUT/variants.txt"
pack
