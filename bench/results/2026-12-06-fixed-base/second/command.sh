#!/usr/bin/env bash
# Issue 40's long rows: the row family's whole launch space (`kjit tune --strategy exhaustive`) at
# the vocabularies of the defaults' sets (50,257, 128,256, 151,936, 256,000 columns, bfloat16),
# to see how far "auto" is from the best launch since online sums and copy groups came in. Then
# attention at 1k × 128 (issue 43's shortest point, furthest behind cuDNN) with the hardware's
# counters (--metrics), a block an item against persistent blocks, to see what each waits on.
set -uo pipefail
source bench/attention_call.sh
tune() {  # NAME ROWS COLS: the tune's records into $OUT/logs/tune-NAME.json, its summary printed
  local name=$1 rows=$2 cols=$3
  timeout 240 "$kjit" tune configs/softmax.json --set dtype=bfloat16 --set "shape=[$rows,$cols]" --strategy exhaustive \
    --json "$OUT/logs/tune-$name.json" > "$OUT/logs/tune-$name.txt" 2>&1
  echo "tune $name: exit $?"; grep -E "best|default|roofline" "$OUT/logs/tune-$name.txt" | head -4
}
{
for pers in false true; do
  point "short_1k128_persistent_$pers" 1024 128 16 16 16 x --set "launch={\"persistent\":$pers}"
  LIMIT=120 point "metrics_1k128_persistent_$pers" 1024 128 16 16 16 x --set "launch={\"persistent\":$pers}" --metrics
done
} 2>&1 | tee "$OUT/short.txt"
pack
{
tune softmax_128256 1024 128256
pack
tune softmax_151936 1024 151936
tune softmax_256000 512 256000
pack
tune softmax_50257 1024 50257
} 2>&1 | tee "$OUT/tunes.txt"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
pack
