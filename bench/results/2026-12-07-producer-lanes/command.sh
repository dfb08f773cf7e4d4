#!/usr/bin/env bash
# Usage: command.sh SECTION... (tests window gpt2_down)
#   tests:     the wgmma rung's producer warp now waits on its barriers with its issuing lane
#              alone (the other lanes only test tiles, and could fall two phases behind): the GPU
#              test that hung on 2026-12-07 ("persistent attention blocks finish…") three times,
#              then the odd shapes;
#   window:    at 8k, the causal window of 1,024 (and a band) with blocks an item and persistent,
#              head dims 128 and 64, beside the plain kernel: whether persistent blocks, which
#              overlap an item's start with the last one's end, lift short items;
#   gpt2_down: `kjit tune` exhaustive at GPT-2's down-projection (4096 × 768 × 3072 + bias), the
#              one public GEMM of issue 40 furthest from cuBLASLt (0.86 on 2026-12-07).
# Each section packs what it wrote.
set -uo pipefail
source bench/attention_call.sh
causal="col > row ? -inf : x"
window="col > row || row - col >= 1024 ? -inf : x"
band="abs(row - col) >= 1024 ? -inf : x"
tests() {
  for round in 1 2 3; do gpu_tests "persistent attention blocks*" 120; done
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
for section in "$@"; do "$section"; done
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
