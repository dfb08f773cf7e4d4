#!/usr/bin/env bash
# Issue 43 on the H200: persistent blocks beside the default (a block a tile of queries) where the
# fourth call found them faster (16k × 128: 666-669 against 635-641) and slower (8k: 658 against
# 684): at more lengths and head dims, causal too, two rounds.
source bench/attention_call.sh
causal="col > row ? -inf : x"
for round in 1 2; do
  for p in 12288:128:1:16 16384:64:1:32 16384:128:1:16 32768:128:1:8 32768:64:1:16 4096:128:4:16; do
    IFS=: read -r seq dim batch heads <<< "$p"
    point "r${round}_s${seq}_d${dim}_default" $seq $dim $batch $heads $heads x
    point "r${round}_s${seq}_d${dim}_persistent" $seq $dim $batch $heads $heads x --set launch.persistent=true
    point "r${round}_s${seq}_d${dim}_causal_default" $seq $dim $batch $heads $heads "$causal"
    point "r${round}_s${seq}_d${dim}_causal_persistent" $seq $dim $batch $heads $heads "$causal" --set launch.persistent=true
  done
done 2>&1 | tee "$OUT/persistent.txt"
pack
