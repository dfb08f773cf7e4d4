#!/usr/bin/env bash
# The fourth call, the session's final code, every goal of the issue in one run: build; the
# ladder at the three shapes, two alternated rounds, with the peers (torch.compile in its
# default mode): simt float32, mma at the third call's best launch (256 × 128 × 64, 4 × 2 warps,
# 4 buffers: a one-point gemm-tune hands it to the gemm part), wgmma alone and with bias + tanh
# and bias + GELU fused.
set -uo pipefail
export OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > "$OUT/env.txt"
bash scripts/gpu-check.sh build > "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
GEMM_TUNE_AXES='{"launch.tile_m":[256],"launch.tile_n":[128],"launch.warps_m":[4],"launch.warps_n":[2],"launch.tile_k":[64],"launch.stages":[4]}' \
    OUT=$OUT/logs bash scripts/gpu-check.sh gemm-tune > /dev/null
GEMM_COMPILE_MODE=default GEMM_VARIANTS="simt_f32 mma wgmma wgmma_tanh wgmma_gelu" OUT=$OUT/logs timeout 200 bash scripts/gpu-check.sh gemm
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
cd "$OUT/logs" && tar czf ../gemm-data.tgz gemm gemm.log gemm_tune.json gemm_tune.log 2>/dev/null
cd "$OUT" && cp logs/gemm_table.md logs/gemm_peers.jsonl . && rm -rf logs
