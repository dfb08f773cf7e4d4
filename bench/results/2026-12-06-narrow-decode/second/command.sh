#!/usr/bin/env bash
# The rule from `first` (few columns: 64 a block, the depth split over clusters up to 64 blocks)
# and the ping-pong's turn handed across persistent items (bench/results/2026-12-06-fixed-base/
# sixth), landed: the stream rung's gpu tests; decode steps at the defaults beside cuBLASLt's addmm,
# two rounds (among them shapes the rule left as they were); attention at head dim 64 (persistent
# by default) beside a block an item, and persistent odd shapes verified, whole items masked among
# them.
set -uo pipefail
source bench/gemm_call.sh
cmake --build build-gpu --target gpu_tests -j "$(nproc)" >> "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
timeout 150 build-gpu/tests/gpu_tests -tc="decode steps*" > "$OUT/logs/gpu_tests.log" 2>&1
{ echo "gpu_tests: exit $?"; tail -3 "$OUT/logs/gpu_tests.log"; grep -m5 -B8 -A12 "ERROR" "$OUT/logs/gpu_tests.log"; } | tee "$OUT/gpu_tests.txt"
pack
shapes=8x1024x4096,16x512x3584,8x1024x16384,16x768x3072,8x2048x8192,8x3584x18944,16x4096x4096
{
for round in 1 2; do
  for mnk in ${shapes//,/ }; do IFS=x read -r m n k <<< "$mnk"; gemm "r${round}_${mnk}_default" "$m" "$n" "$k" bfloat16; done
  gemm "r${round}_16x768x3072_unsplit" 16 768 3072 bfloat16 --set 'launch={"rung":"stream","cores":"tensor","tile_n":32,"buffers":2}'
  gemm "r${round}_8x2048x8192_unsplit" 8 2048 8192 bfloat16 --set 'launch={"rung":"stream","cores":"tensor","tile_n":32,"buffers":2}'
  python3 bench/peers/gemm_peers.py --shapes $shapes --tools cublaslt_bias --no-fp32 --repeat 30 2> "$OUT/logs/peers_r$round.err" | tee -a "$OUT/logs/peers.jsonl"
  pack
done
} 2>&1 | tee "$OUT/decode.txt"
{
for round in 1 2; do
  point "r${round}_1k64_default" 1024 64 16 32 32 x
  point "r${round}_1k64_item" 1024 64 16 32 32 x --set 'launch={"persistent":false}'
  point "r${round}_4k64_default" 4096 64 4 32 32 x
  point "r${round}_4k64_item" 4096 64 4 32 32 x --set 'launch={"persistent":false}'
done
for dim in 64 128; do
  point "odd_persistent_4097_${dim}_causal" 4097 $dim 2 8 2 "col > row ? -inf : x" --set 'launch={"persistent":true}'
  point "odd_persistent_17_${dim}" 17 $dim 2 8 8 x --set 'launch={"persistent":true}'
  point "odd_persistent_4097_${dim}_rows_masked" 4097 $dim 2 8 2 "row >= 1000 ? -inf : x" --set 'launch={"persistent":true}'
done
point odd_persistent_1000_96_window 1000 96 2 8 4 "col > row || row - col >= 300 ? -inf : x" --set 'launch={"persistent":true}'
} 2>&1 | tee "$OUT/attention.txt"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
pack
