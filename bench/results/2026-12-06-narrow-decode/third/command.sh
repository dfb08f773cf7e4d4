#!/usr/bin/env bash
# Usage: command.sh SECTION... (persistent_masked attention_tests decode thin_wgmma packed_weights).
# Prepared, not run (device time ran out, and on 2026-12-07 every start was refused). `second`
# found a persistent launch of three consumers (head dim 64) unfinished after 40 s where whole
# items are masked (`row >= 1000 ? -inf : x` at 4097 queries), with the ping-pong's turn handed
# across items. Here:
# that point with the handoff (handoff.patch, which also takes, at a block's end, a first turn
# given for items that all turned out masked), with the templates as they are (no handoff), and
# a block an item; 1k × 64 at the defaults with and without the handoff. Then the decode rule
# refined from `second` (32 columns a block where the product is shallower than 8192) at the
# shapes it changed, beside cuBLASLt's addmm.
set -uo pipefail
source bench/gemm_call.sh
handoff=$(mktemp -d)
cp -r kernel_templates "$handoff/"
patch -s -d "$handoff" -p1 < bench/results/2026-12-06-narrow-decode/third/handoff.patch
masked='row >= 1000 ? -inf : x'
persistent_masked() {
{
LIMIT=15 point rows_masked_64_handoff 4097 64 2 8 2 "$masked" --set 'launch={"persistent":true}' --templates "$handoff/kernel_templates"
LIMIT=15 point rows_masked_64_now 4097 64 2 8 2 "$masked" --set 'launch={"persistent":true}'
LIMIT=15 point rows_masked_64_item 4097 64 2 8 2 "$masked" --set 'launch={"persistent":false}'
point 1k64_default 1024 64 16 32 32 x
point 1k64_handoff 1024 64 16 32 32 x --templates "$handoff/kernel_templates"
} 2>&1 | tee "$OUT/attention.txt"
pack
}
decode() {
{
for mnk in 16x768x3072 16x512x3584 8x1024x4096; do IFS=x read -r m n k <<< "$mnk"; gemm "${mnk}_default" "$m" "$n" "$k" bfloat16; done
python3 bench/peers/gemm_peers.py --shapes 16x768x3072,16x512x3584,8x1024x4096 --tools cublaslt_bias --no-fp32 --repeat 20 2> "$OUT/logs/peers.err"
} 2>&1 | tee "$OUT/decode.txt"
pack
}
# wgmma's thin tiles where few columns leave most SMs idle (32 and 64 rows: the default splits
# the depth in 2 at most): 64-row ping-pong tiles, 64 or 128 columns, the depth in 1, 2 or 4
# parts, 4 or 8 buffers; and the decode step at 64 × 4096 × 4096 (0.87 of cuBLASLt).
tune_wgmma() {  # M N K
  local m=$1 n=$2 k=$3
  timeout 120 "$kjit" tune configs/mlp_layer.json --strategy exhaustive --set dtype=bfloat16 --set "shape=[$m,$k]" \
    --set "inputs.W.shape=[$k,$n]" --set 'stages=[{"op":"matmul","input":"x_in","by":"W"},{"op":"bias","by":"b"}]' \
    --set 'launch={"rung":"wgmma","tile_m":64,"schedule":"pingpong"}' \
    --set 'tune={"axes":{"launch.tile_n":[64,128],"launch.split_k":[1,2,4],"launch.buffers":[4,8]}}' \
    --json "$OUT/logs/tune_wgmma_${m}x${n}x${k}.json" > "$OUT/logs/tune_wgmma_${m}x${n}x${k}.txt" 2>&1
  echo "tune wgmma ${m}x${n}x${k}: exit $?"; grep -A5 "  best" "$OUT/logs/tune_wgmma_${m}x${n}x${k}.txt"
}
thin_wgmma() {
{
for mnk in 32x1024x8192 64x2048x4096 64x4096x4096; do IFS=x read -r m n k <<< "$mnk"; tune_wgmma "$m" "$n" "$k"; gemm "${mnk}_default" "$m" "$n" "$k" bfloat16; done
python3 bench/peers/gemm_peers.py --shapes 32x1024x8192,64x2048x4096,64x4096x4096 --tools cublaslt_bias --no-fp32 --repeat 20 2> "$OUT/logs/peers_wgmma.err"
} 2>&1 | tee "$OUT/wgmma.txt"
pack
}
# The mma rung's weights packed to 16 bits for the whole tile before its P · V (they were packed
# 16 keys at a time, S's floats live until then): 255 registers, 120 → 80 bytes spilled at head
# dim 128, 72 → 52 at 64 (packed-weights.patch). Against the templates as they are, alternated,
# FlashAttention-2 (sdpa's FLASH backend) in the same call.
packed_weights() {
packed=$(mktemp -d)
cp -r kernel_templates "$packed/"
patch -s -d "$packed" -p1 < bench/results/2026-12-06-narrow-decode/third/packed-weights.patch
{
for round in 1 2; do
  for v in now packed; do
    t=(); [ $v = packed ] && t=(--templates "$packed/kernel_templates")
    point "r${round}_mma_8k128_$v" 8192 128 2 16 16 x --set 'launch.rung="mma"' "${t[@]}"
    point "r${round}_mma_8k128_causal_$v" 8192 128 2 16 16 "col > row ? -inf : x" --set 'launch.rung="mma"' "${t[@]}"
    point "r${round}_mma_1k128_$v" 1024 128 16 16 16 x --set 'launch.rung="mma"' "${t[@]}"
    point "r${round}_mma_4k64_$v" 4096 64 4 32 32 x --set 'launch.rung="mma"' "${t[@]}"
  done
done
point mma_odd_packed 4097 128 1 8 2 "col > row ? -inf : x" --set 'launch.rung="mma"' --templates "$packed/kernel_templates"
point mma_odd64_packed 1000 64 2 8 1 x --set 'launch.rung="mma"' --templates "$packed/kernel_templates"
(cd bench/peers && timeout 90 python3 attention_peers.py --repeat 10 --tools flash --grid 1024:128,8192:128,4096:64 --causal both)
} 2>&1 | tee "$OUT/mma.txt"
pack
}
# The attention GPU tests since 2026-12-07: persistent blocks with whole items masked, and the
# odd shapes on both rungs and separate.
attention_tests() {
gpu_tests "persistent attention blocks*,attention verifies at odd shapes*" 400
pack
}
# The sections named on the command line, in order (one call's 600 s does not hold them all).
for section in "$@"; do "$section"; done
