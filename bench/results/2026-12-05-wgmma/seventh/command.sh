#!/usr/bin/env bash
# Issue 43, seventh call: the one odd shape the sixth found wrong (the mma rung, 1000 queries, head
# dim 128, 8 heads of K and V, causal), again: three times as it was, three with plain tiles off,
# three with 1 head of K and V (which passed), to tell a race from a rule.
source bench/attention_call.sh
causal="col > row ? -inf : x"
for i in 1 2 3; do
  LIMIT=30 point "again${i}_kv8" 1000 128 2 8 8 "$causal" --set 'launch.rung="mma"' --set measure.repeat=3 --set measure.warmup=1
  LIMIT=30 point "again${i}_kv8_unplain" 1000 128 2 8 8 "$causal" --set 'launch.rung="mma"' --set launch.plain_tiles=false --set measure.repeat=3 --set measure.warmup=1
  LIMIT=30 point "again${i}_kv1" 1000 128 2 8 1 "$causal" --set 'launch.rung="mma"' --set measure.repeat=3 --set measure.warmup=1
done 2>&1 | tee "$OUT/again.txt"
pack && rm -rf "$OUT/logs"
