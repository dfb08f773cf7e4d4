#!/usr/bin/env bash
# `second` found persistent blocks of three consumers (head dim 64) stuck where whole items are
# masked (`row >= 1000 ? -inf : x` at 4097 queries). The templates since take a first turn given
# for such items at the block's end; beside them the templates before the turn handoff
# (handoff.patch reversed: the turn handoff and that end) and a block an item; 1k × 64 at the defaults. Then
# the decode rule refined from `second` (32 columns a block where the product is shallower than
# 8192) at the shapes it changed, beside cuBLASLt's addmm.
set -uo pipefail
source bench/gemm_call.sh
before=$(mktemp -d)
cp -r kernel_templates "$before/"
patch -s -R -d "$before" -p1 < bench/results/2026-12-06-narrow-decode/third/handoff.patch
masked='row >= 1000 ? -inf : x'
{
LIMIT=15 point rows_masked_64_now 4097 64 2 8 2 "$masked" --set 'launch={"persistent":true}'
LIMIT=15 point rows_masked_64_before_handoff 4097 64 2 8 2 "$masked" --set 'launch={"persistent":true}' --templates "$before/kernel_templates"
LIMIT=15 point rows_masked_64_item 4097 64 2 8 2 "$masked" --set 'launch={"persistent":false}'
point 1k64_default 1024 64 16 32 32 x
} 2>&1 | tee "$OUT/attention.txt"
pack
{
for mnk in 16x768x3072 16x512x3584 8x1024x4096; do IFS=x read -r m n k <<< "$mnk"; gemm "${mnk}_default" "$m" "$n" "$k" bfloat16; done
python3 bench/peers/gemm_peers.py --shapes 16x768x3072,16x512x3584,8x1024x4096 --tools cublaslt_bias --no-fp32 --repeat 20 2> "$OUT/logs/peers.err"
} 2>&1 | tee "$OUT/decode.txt"
pack
