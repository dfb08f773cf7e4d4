#!/usr/bin/env bash
# Issue 40's decode steps with few columns (grouped-query K and V projections, 512–2048 columns,
# and a deep narrow product): the stream rung's launches tuned exhaustively at each shape (columns
# 32 or 64, 8 or 16 warps, the depth split over clusters of 1, 2, 4 or 8 blocks, 1 or 2 steps in
# flight; CUDA cores beside at 1 row), then the defaults and cuBLASLt's addmm in the same call.
# The templates add up a block's warps' sums before the cluster's first block reads them
# (two-level-sums.patch); the split launches at 8 × 1024 × 16384 run beside the one-level sum too.
set -uo pipefail
source bench/gemm_call.sh
product='stages=[{"op":"matmul","input":"x_in","by":"W"},{"op":"bias","by":"b"}]'
tune_shape() {  # M N K: the stream rung's launches, exhaustively; prints the five fastest
  local m=$1 n=$2 k=$3 cores='"tensor"'
  [ "$m" -le 2 ] && cores='"cuda"'
  timeout 150 "$kjit" tune configs/mlp_layer.json --strategy exhaustive --set dtype=bfloat16 --set "shape=[$m,$k]" \
    --set "inputs.W.shape=[$k,$n]" --set "$product" --set "launch={\"rung\":\"stream\",\"cores\":$cores}" \
    --set "tune={\"axes\":{\"launch.tile_n\":[32,64],\"launch.warps_n\":[8,16],\"launch.split_k\":[1,2,4,8],\"launch.buffers\":[1,2]}}" \
    --json "$OUT/logs/tune_${m}x${n}x${k}.json" > "$OUT/logs/tune_${m}x${n}x${k}.txt" 2>&1
  echo "tune ${m}x${n}x${k}: exit $?"; grep -A5 "  best" "$OUT/logs/tune_${m}x${n}x${k}.txt"; grep "measured" "$OUT/logs/tune_${m}x${n}x${k}.txt"
}
shapes=1x1024x4096,8x1024x4096,16x512x3584,32x1024x8192,8x1024x16384,64x2048x4096
{
for mnk in ${shapes//,/ }; do IFS=x read -r m n k <<< "$mnk"; tune_shape "$m" "$n" "$k"; done
pack
one_level=$(mktemp -d)
cp -r kernel_templates "$one_level/" && patch -s -R -d "$one_level" -p1 < bench/results/2026-12-06-narrow-decode/first/two-level-sums.patch
for split in 2 4 8; do
  for t in 32 64; do
    l="{\"rung\":\"stream\",\"cores\":\"tensor\",\"tile_n\":$t,\"split_k\":$split,\"buffers\":2}"
    gemm "two_level_s${split}_t$t" 8 1024 16384 bfloat16 --set "launch=$l"
    gemm "one_level_s${split}_t$t" 8 1024 16384 bfloat16 --set "launch=$l" --templates "$one_level/kernel_templates"
  done
done
for round in 1 2; do
  for mnk in ${shapes//,/ }; do IFS=x read -r m n k <<< "$mnk"; gemm "r${round}_${mnk}_default" "$m" "$n" "$k" bfloat16; done
  python3 bench/peers/gemm_peers.py --shapes $shapes --tools cublaslt_bias --no-fp32 --repeat 30 2> "$OUT/logs/peers_r$round.err" | tee -a "$OUT/logs/peers.jsonl"
done
} 2>&1 | tee "$OUT/decode.txt"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
pack
# The stream rung's gpu tests (splits over clusters of 8 among their launches since)
cmake --build build-gpu --target gpu_tests -j "$(nproc)" >> "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
timeout 200 build-gpu/tests/gpu_tests -tc="decode steps*" > "$OUT/logs/gpu_tests.log" 2>&1
{ echo "gpu_tests: exit $?"; tail -3 "$OUT/logs/gpu_tests.log"; grep -m5 -B8 -A12 "ERROR" "$OUT/logs/gpu_tests.log"; } | tee "$OUT/gpu_tests.txt"
pack
