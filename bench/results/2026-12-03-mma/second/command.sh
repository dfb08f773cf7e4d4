#!/usr/bin/env bash
# The second call: build, the gpu tests, the mma rung (mbarrier pipeline) tuned at 8192³ over
# tiles, warps, depth and buffers, then mma (at the tune's best), its fused tanh and GELU, and
# wgmma at the three shapes with the peers (torch.compile in its default mode); ncu at the
# tune's best launch.
set -uo pipefail
export OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > "$OUT/env.txt"
bash scripts/gpu-check.sh build > "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
ctest --test-dir build-gpu -L gpu --output-on-failure -V > "$OUT/logs/tests.log" 2>&1
echo "gpu tests exit $?"; grep -E "test cases|assertions" "$OUT/logs/tests.log" | tail -2
GEMM_TUNE_AXES='{"launch.tile_m":[128,256],"launch.tile_n":[128,256],"launch.warps_m":[2,4],"launch.warps_n":[2,4],"launch.tile_k":[32,64],"launch.stages":[3,4]}' \
    OUT=$OUT/logs bash scripts/gpu-check.sh gemm-tune
# ncu's throughput, warp-state and scheduler sections at the tune's best launch, 8192³
mapfile -t best < <(python3 scripts/tune_table.py --best-sets "$OUT/logs/gemm_tune.json")
timeout 90 ncu --clock-control none -k mlp_layer_matmul -s 2 -c 1 --section SpeedOfLight --section WarpStateStats \
    --section SchedulerStats --section Occupancy --section MemoryWorkloadAnalysis \
    build-gpu/kjit run configs/mlp_layer.json --set "shape=[8192,8192]" --set "inputs.W.shape=[8192,8192]" \
    --set 'stages=[{"op":"matmul","input":"x_in","by":"W"}]' "${best[@]}" --set measure.repeat=3 --set measure.warmup=1 \
    --skip-ceiling > "$OUT/ncu_best.txt" 2>&1
grep -E "L2 Cache Throughput|SM Frequency|Duration|Compute \(SM\)|Registers Per|Achieved Active" "$OUT/ncu_best.txt"
GEMM_COMPILE_MODE=default GEMM_VARIANTS="mma mma_tanh mma_gelu wgmma" OUT=$OUT/logs bash scripts/gpu-check.sh gemm
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
cd "$OUT/logs" && tar czf ../gemm-data.tgz gemm gemm.log gemm_tune.json gemm_tune.log 2>/dev/null
cd "$OUT" && cp logs/gemm_table.md logs/gemm_peers.jsonl . && gzip -c logs/tests.log > tests.log.gz && rm -rf logs
