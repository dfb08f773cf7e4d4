#!/usr/bin/env bash
# The stream rung's tensor-core rule refined from the second call: from 3 rows, 8 warps where the
# blocks outnumber the SMs (16 warps' registers fill one), the depth split over clusters of 4 where
# four times the blocks fit one a SM. Decode shapes at the defaults, the launches the rule changed
# beside them, cuBLASLt's addmm in the same call, two rounds (each run verifies its product).
set -uo pipefail
source bench/gemm_call.sh
shapes=3x4096x4096,8x4096x4096,16x4096x4096,16x11008x4096,16x4096x11008,16x768x3072,16x3072x768,12x14336x4096
{
for round in 1 2; do
  for mnk in ${shapes//,/ }; do
    IFS=x read -r m n k <<< "$mnk"
    gemm "r${round}_${mnk}_default" "$m" "$n" "$k" bfloat16
  done
  gemm "r${round}_16x11008x4096_w16" 16 11008 4096 bfloat16 --set 'launch={"rung":"stream","warps_n":16}'
  gemm "r${round}_16x768x3072_s1" 16 768 3072 bfloat16 --set 'launch={"rung":"stream","split_k":1}'
  gemm "r${round}_12x14336x4096_w16" 12 14336 4096 bfloat16 --set 'launch={"rung":"stream","warps_n":16}'
  python3 bench/peers/gemm_peers.py --shapes $shapes --tools cublaslt_bias --no-fp32 --repeat 30 2> "$OUT/logs/peers_r$round.err" | tee -a "$OUT/logs/peers.jsonl"
  pack
done
} 2>&1 | tee "$OUT/decode.txt"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
pack
