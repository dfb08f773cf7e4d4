#!/usr/bin/env bash
# Prepared, not run (the session's device time ran out). `second` found a persistent launch of
# three consumers (head dim 64) unfinished after 40 s where whole items are masked
# (`row >= 1000 ? -inf : x` at 4097 queries), with the ping-pong's turn handed across items. Here:
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
{
LIMIT=15 point rows_masked_64_handoff 4097 64 2 8 2 "$masked" --set 'launch={"persistent":true}' --templates "$handoff/kernel_templates"
LIMIT=15 point rows_masked_64_now 4097 64 2 8 2 "$masked" --set 'launch={"persistent":true}'
LIMIT=15 point rows_masked_64_item 4097 64 2 8 2 "$masked" --set 'launch={"persistent":false}'
point 1k64_default 1024 64 16 32 32 x
point 1k64_handoff 1024 64 16 32 32 x --templates "$handoff/kernel_templates"
} 2>&1 | tee "$OUT/attention.txt"
pack
{
for mnk in 16x768x3072 16x512x3584 8x1024x4096; do IFS=x read -r m n k <<< "$mnk"; gemm "${mnk}_default" "$m" "$n" "$k" bfloat16; done
python3 bench/peers/gemm_peers.py --shapes 16x768x3072,16x512x3584,8x1024x4096 --tools cublaslt_bias --no-fp32 --repeat 20 2> "$OUT/logs/peers.err"
} 2>&1 | tee "$OUT/decode.txt"
pack
