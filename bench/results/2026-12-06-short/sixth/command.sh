#!/usr/bin/env bash
# The fifth call had ping-pong ahead of overlap at head dim 64 without a mask at 1k and 2k (384
# against 365, 470 against 453): does it hold at 4k and 16k, where overlap was chosen? Two rounds,
# alternated. Then every shipped config on the GPU (tests/test_gpu.cpp) at the session's code.
source bench/attention_call.sh
cmake --build build-gpu --target gpu_tests -j "$(nproc)" >> "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
{
for round in 1 2; do
  for seq in 1024 2048 4096 16384; do
    batch=$((16384 / seq))
    point "r${round}_overlap_s${seq}_d64_full" $seq 64 $batch 32 32 x
    point "r${round}_pingpong_s${seq}_d64_full" $seq 64 $batch 32 32 x --set 'launch.schedule="pingpong"'
  done
done
pack
} 2>&1 | tee "$OUT/points.txt"
timeout 240 build-gpu/tests/gpu_tests -tc="every shipped config*" > "$OUT/logs/gpu_tests.log" 2>&1
{ echo "gpu_tests: exit $?"; tail -3 "$OUT/logs/gpu_tests.log"; grep -m5 -B8 -A12 "ERROR" "$OUT/logs/gpu_tests.log"; } | tee "$OUT/gpu_tests.txt"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
pack
