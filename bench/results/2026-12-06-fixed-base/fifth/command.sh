#!/usr/bin/env bash
# Prepared, not run (the session's device time ran out): attention's online softmax rescaling only
# where a max grew past its base by more than 2^8, as FlashAttention-4 does (lazy-rescale.patch,
# against the templates of the commit that adds this folder), beside the templates as they are,
# alternated, at issue 43's points. Its nvrtc test found 120 bytes spilled at head dim 256 with
# persistent ping-pong blocks (a launch "auto" does not take there).
set -uo pipefail
source bench/attention_call.sh
lazy=$(mktemp -d)
cp -r kernel_templates "$lazy/" && patch -s -d "$lazy" -p1 < bench/results/2026-12-06-fixed-base/fifth/lazy-rescale.patch
{
for spec in "8k128 8192 128 2 16" "4k128 4096 128 4 16" "1k128 1024 128 16 16" "4k64 4096 64 4 32"; do
  read -r name seq dim batch heads <<< "$spec"
  point "${name}_lazy" "$seq" "$dim" "$batch" "$heads" "$heads" x --templates "$lazy/kernel_templates"
  point "${name}_base" "$seq" "$dim" "$batch" "$heads" "$heads" x
  pack
done
point causal8k128_lazy 8192 128 2 16 16 "col > row ? -inf : x" --templates "$lazy/kernel_templates"
point causal8k128_base 8192 128 2 16 16 "col > row ? -inf : x"
point mma8k128_lazy 8192 128 2 16 16 x --set 'launch={"rung":"mma"}' --templates "$lazy/kernel_templates"
point mma8k128_base 8192 128 2 16 16 x --set 'launch={"rung":"mma"}'
point odd_lazy_4097_96_causal 4097 96 2 8 2 "col > row ? -inf : x" --templates "$lazy/kernel_templates"
point odd_mma_lazy_1000_128 1000 128 2 8 2 "col > row ? -inf : x" --set 'launch={"rung":"mma"}' --templates "$lazy/kernel_templates"
} 2>&1 | tee "$OUT/rescale.txt"
pack
