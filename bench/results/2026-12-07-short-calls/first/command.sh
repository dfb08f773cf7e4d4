#!/usr/bin/env bash
# The most pressing of `2026-12-06-narrow-decode/third` for a short call: (1) does a persistent
# launch of three consumers (head dim 64) finish where whole items are masked (`row >= 1000 ? -inf
# : x` at 4097 queries), with the templates as they are (no turn handoff) and a block an item;
# (2) wgmma's thin tiles at 32 and 64 rows of few columns (64-row ping-pong tiles, 64 or 128
# columns, the depth in 1, 2 or 4 parts, 4 or 8 buffers), the default and cuBLASLt beside; (3) the
# mma rung's packed weights (`narrow-decode/third/packed-weights.patch`) against the templates as
# they are at 8k × 128, alternated, FlashAttention-2 in the same call.
set -uo pipefail
source bench/gemm_call.sh
masked='row >= 1000 ? -inf : x'
{
LIMIT=15 point rows_masked_64_now 4097 64 2 8 2 "$masked" --set 'launch={"persistent":true}'
LIMIT=15 point rows_masked_64_item 4097 64 2 8 2 "$masked" --set 'launch={"persistent":false}'
} 2>&1 | tee "$OUT/attention.txt"
pack
tune_wgmma() {  # M N K
  local m=$1 n=$2 k=$3
  timeout 100 "$kjit" tune configs/mlp_layer.json --strategy exhaustive --set dtype=bfloat16 --set "shape=[$m,$k]" \
    --set "inputs.W.shape=[$k,$n]" --set 'stages=[{"op":"matmul","input":"x_in","by":"W"},{"op":"bias","by":"b"}]' \
    --set 'launch={"rung":"wgmma","tile_m":64,"schedule":"pingpong"}' \
    --set 'tune={"axes":{"launch.tile_n":[64,128],"launch.split_k":[1,2,4],"launch.buffers":[4,8]}}' \
    --json "$OUT/logs/tune_wgmma_${m}x${n}x${k}.json" > "$OUT/logs/tune_wgmma_${m}x${n}x${k}.txt" 2>&1
  echo "tune wgmma ${m}x${n}x${k}: exit $?"; grep -A5 "  best" "$OUT/logs/tune_wgmma_${m}x${n}x${k}.txt"
}
{
for mnk in 32x1024x8192 64x2048x4096; do IFS=x read -r m n k <<< "$mnk"; tune_wgmma "$m" "$n" "$k"; gemm "${mnk}_default" "$m" "$n" "$k" bfloat16; done
python3 bench/peers/gemm_peers.py --shapes 32x1024x8192,64x2048x4096 --tools cublaslt_bias --no-fp32 --repeat 20 2> "$OUT/logs/peers_gemm.err"
} 2>&1 | tee "$OUT/wgmma.txt"
pack
packed=$(mktemp -d)
cp -r kernel_templates "$packed/"
patch -s -d "$packed" -p1 < bench/results/2026-12-06-narrow-decode/third/packed-weights.patch
{
for round in 1 2; do
  point "r${round}_mma_8k128_now" 8192 128 2 16 16 x --set 'launch.rung="mma"'
  point "r${round}_mma_8k128_packed" 8192 128 2 16 16 x --set 'launch.rung="mma"' --templates "$packed/kernel_templates"
done
point mma_odd_packed 4097 128 1 8 2 "col > row ? -inf : x" --set 'launch.rung="mma"' --templates "$packed/kernel_templates"
(cd bench/peers && timeout 60 python3 attention_peers.py --repeat 10 --tools flash --grid 8192:128 --causal no)
} 2>&1 | tee "$OUT/mma.txt"
pack
