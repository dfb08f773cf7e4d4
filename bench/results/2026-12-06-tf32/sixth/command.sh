#!/usr/bin/env bash
# The stream rung with each block adding its warps' sums before the cluster's first block reads
# one value an element of each other block (where it read every warp's): decode steps at the
# defaults beside cuBLASLt's addmm in the same call, two rounds; then its gpu test.
set -uo pipefail
source bench/gemm_call.sh
cmake --build build-gpu --target gpu_tests -j "$(nproc)" >> "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
shapes=1x4096x4096,2x4096x4096,4x4096x4096,1x11008x4096,1x5120x5120,1x768x3072,1x3072x768
{
for round in 1 2; do
  for mnk in ${shapes//,/ }; do
    IFS=x read -r m n k <<< "$mnk"
    gemm "r${round}_${mnk}_default" "$m" "$n" "$k" bfloat16
  done
  python3 bench/peers/gemm_peers.py --shapes $shapes --tools cublaslt_bias --no-fp32 --repeat 30 2> "$OUT/logs/peers_r$round.err" | tee -a "$OUT/logs/peers.jsonl"
  pack
done
} 2>&1 | tee "$OUT/decode.txt"
timeout 150 build-gpu/tests/gpu_tests -tc="decode steps verify*" > "$OUT/logs/gpu_tests.log" 2>&1
{ echo "gpu_tests: exit $?"; tail -3 "$OUT/logs/gpu_tests.log"; grep -m5 -B8 -A12 "ERROR" "$OUT/logs/gpu_tests.log"; } | tee "$OUT/gpu_tests.txt"
pack
