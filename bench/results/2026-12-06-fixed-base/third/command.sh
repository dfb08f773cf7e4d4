#!/usr/bin/env bash
# Issue 40's long rows after the rule change that `second` measured: a row over a cluster takes
# blocks of about 128 bytes of its eighth a thread, not streamed. Softmax at the four vocabularies,
# and RMS and layer norm at 128,256, at the new defaults against the old launch (blocks of 128,
# streamed) in alternated rounds, each beside the copy ceiling kjit measures; then odd lengths
# that take the new blocks, verified at the defaults.
set -uo pipefail
source bench/attention_call.sh
row() {  # NAME CONFIG ROWS COLS [more kjit run options]: one line of status, cold median, % of copy
  local name=$1 config=$2 rows=$3 cols=$4; shift 4
  timeout 60 "$kjit" run "configs/$config" --set dtype=bfloat16 --set "shape=[$rows,$cols]" "$@" \
    --json "$OUT/logs/$name.json" > "$OUT/logs/$name.txt" 2>&1
  echo "$name: exit $? $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); r=r[0] if isinstance(r,list) else r; print(r.get("status"), r.get("variant"), "cold_us", round(1000*r.get("kernel_cold_median_ms"),1), "of_copy", r.get("percent_of_ceiling"))' "$OUT/logs/$name.json" 2>/dev/null || tail -2 "$OUT/logs/$name.txt")"
}
old='launch={"block":128,"streaming":true,"cluster":8,"row_cache":"shared"}'
{
for rnd in 1 2; do
  for shape in 1024x128256 1024x151936 512x256000 1024x50257; do
    IFS=x read -r r c <<< "$shape"
    row "r${rnd}_softmax_${c}_new" softmax.json "$r" "$c"
    [ "$c" != 50257 ] && row "r${rnd}_softmax_${c}_old" softmax.json "$r" "$c" --set "$old"
  done
  for op in rmsnorm layernorm; do
    row "r${rnd}_${op}_128256_new" $op.json 1024 128256
    row "r${rnd}_${op}_128256_old" $op.json 1024 128256 --set "$old"
  done
  pack
done
for c in 65537 128256 200001; do
  for op in softmax rmsnorm layernorm causal_softmax; do
    row "odd_${op}_7x${c}" $op.json 7 "$c"
  done
  row "odd_softmax_7x${c}_f32" softmax.json 7 "$c" --set dtype=float32
done
} 2>&1 | tee "$OUT/rows.txt"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
pack
