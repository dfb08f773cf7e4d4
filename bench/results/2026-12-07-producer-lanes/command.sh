#!/usr/bin/env bash
# Usage: command.sh SECTION... (tests window gpt2_down handoff defaults_d64)
#   tests:     the wgmma rung's producer warp now waits on its barriers with its issuing lane
#              alone (the other lanes only test tiles, and could fall two phases behind): the GPU
#              test that hung on 2026-12-07 ("persistent attention blocks finish…") $ROUNDS times (3),
#              then the odd shapes;
#   window:    at 8k, the causal window of 1,024 (and a band) with blocks an item and persistent,
#              head dims 128 and 64, beside the plain kernel: whether persistent blocks, which
#              overlap an item's start with the last one's end, lift short items;
#   gpt2_down: `kjit tune` exhaustive at GPT-2's down-projection (4096 × 768 × 3072 + bias), the
#              one public GEMM of issue 40 furthest from cuBLASLt (0.86 on 2026-12-07).
#   handoff:   the persistent blocks' turn handed to consumer 0 as the last consumer issues its
#              last products of an item (bench/results/2026-12-06-narrow-decode/third/handoff.patch,
#              held out since a persistent launch hung that day), applied to a copy of the
#              templates (--templates): the masked-items point that hung, five times, then 1k and
#              4k × 128, 1k × 64 and the window, a block an item, persistent, persistent + handoff.
#   defaults_d64: 1k and 4k × 64 at the defaults (persistent blocks there), once the handoff is in
#              the templates: run after `tests`, which then proves the handoff too.
# Each section packs what it wrote.
set -uo pipefail
source bench/attention_call.sh
causal="col > row ? -inf : x"
window="col > row || row - col >= 1024 ? -inf : x"
band="abs(row - col) >= 1024 ? -inf : x"
tests() {
  for round in $(seq "${ROUNDS:-3}"); do gpu_tests "persistent attention blocks*" 120; done
  gpu_tests "attention verifies at odd shapes*" 300
  pack
}
window() {
  {
  for dim in 128 64; do
    heads=$((2048 / dim))
    point "plain_d$dim" 8192 "$dim" 2 "$heads" "$heads" x
    point "window_d$dim" 8192 "$dim" 2 "$heads" "$heads" "$window"
    point "window_d${dim}_persistent" 8192 "$dim" 2 "$heads" "$heads" "$window" --set 'launch.persistent=true'
    point "band_d$dim" 8192 "$dim" 2 "$heads" "$heads" "$band"
    point "band_d${dim}_persistent" 8192 "$dim" 2 "$heads" "$heads" "$band" --set 'launch.persistent=true'
  done
  } 2>&1 | tee "$OUT/window.txt"
  pack
}
gpt2_down() {
  timeout 240 "$kjit" tune configs/mlp_layer.json --strategy exhaustive --set dtype=bfloat16 \
    --set 'shape=[4096,3072]' --set 'inputs.W.shape=[3072,768]' \
    --set 'stages=[{"op":"matmul","input":"x_in","by":"W"},{"op":"bias","by":"b"}]' \
    --json "$OUT/logs/tune_gpt2_down.json" > "$OUT/tune_gpt2_down.txt" 2>&1
  echo "tune: exit $?"; tail -25 "$OUT/tune_gpt2_down.txt"
  pack
}
handoff() {
  rm -rf /tmp/handoff && cp -r kernel_templates /tmp/handoff &&
    sed 's#kernel_templates/##g' bench/results/2026-12-06-narrow-decode/third/handoff.patch | (cd /tmp/handoff && patch -p1) ||
    { echo "handoff: the patch did not apply"; return 1; }
  local hand=(--templates /tmp/handoff --set 'launch.persistent=true')
  {
  for round in 1 2 3 4 5; do
    KJIT_GPU_WAIT_LIMIT=20 LIMIT=60 point "masked_items_d64_r$round" 4097 64 2 8 2 "row >= 1000 ? -inf : x" "${hand[@]}"
  done
  for p in 1024:128 4096:128 1024:64; do
    seq=${p%:*}; dim=${p#*:}; batch=$((16384 / seq)); heads=$((2048 / dim))
    point "item_s${seq}_d$dim" "$seq" "$dim" "$batch" "$heads" "$heads" x --set 'launch.persistent=false'
    point "persistent_s${seq}_d$dim" "$seq" "$dim" "$batch" "$heads" "$heads" x --set 'launch.persistent=true'
    point "handoff_s${seq}_d$dim" "$seq" "$dim" "$batch" "$heads" "$heads" x "${hand[@]}"
  done
  for dim in 128 64; do
    heads=$((2048 / dim))
    point "handoff_window_d$dim" 8192 "$dim" 2 "$heads" "$heads" "$window" "${hand[@]}"
  done
  } 2>&1 | tee "$OUT/handoff.txt"
  pack
}
defaults_d64() {
  for seq in 1024 4096; do
    point "default_s${seq}_d64" "$seq" 64 $((16384 / seq)) 32 32 x
  done 2>&1 | tee "$OUT/defaults_d64.txt"
  pack
}
for section in "$@"; do "$section"; done
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
