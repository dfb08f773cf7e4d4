#!/usr/bin/env bash
# Persistent blocks with the ping-pong's turn handed across work items (turn-handoff.patch, against
# the templates of the commit that adds this folder): the last consumer gives consumer 0 its first
# turn of the next item as it issues its own last products, not after its store and the next
# item's start. Beside the templates as they are (persistent and a block an item), alternated, two
# rounds, at issue 43's short points (where a block's fixed costs weigh), head dim 64's (persistent
# by default), a causal window of 1,024 at 8k and causal 4k.
set -uo pipefail
source bench/attention_call.sh
turn=$(mktemp -d)
cp -r kernel_templates "$turn/" && patch -s -d "$turn" -p1 < bench/results/2026-12-06-fixed-base/sixth/turn-handoff.patch
window='col > row || row - col >= 1024 ? -inf : x'
three() {  # NAME SEQ DIM BATCH HEADS SCORE: handed-over persistent, persistent, a block an item
  local name=$1; shift
  point "${name}_handoff" "$@" --set 'launch={"persistent":true}' --templates "$turn/kernel_templates"
  point "${name}_persistent" "$@" --set 'launch={"persistent":true}'
  point "${name}_item" "$@" --set 'launch={"persistent":false}'
}
{
for round in 1 2; do
  three "r${round}_1k128" 1024 128 16 16 16 x
  three "r${round}_4k128" 4096 128 4 16 16 x
  three "r${round}_1k64" 1024 64 16 32 32 x
  three "r${round}_window8k128" 8192 128 2 16 16 "$window"
  three "r${round}_causal4k128" 4096 128 4 16 16 "col > row ? -inf : x"
  pack
done
point odd_handoff_4097_96_causal 4097 96 2 8 2 "col > row ? -inf : x" --set 'launch={"persistent":true}' --templates "$turn/kernel_templates"
point odd_handoff_1000_64_window 1000 64 2 8 8 "col > row || row - col >= 300 ? -inf : x" --set 'launch={"persistent":true}' --templates "$turn/kernel_templates"
} 2>&1 | tee "$OUT/handoff.txt"
pack
