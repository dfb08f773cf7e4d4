#!/usr/bin/env bash
# The epilogue call: build, the gpu tests (odd shapes on every rung), mma.sync's own ceiling, the
# matmul's epilogue variants at the three shapes with the peers (torch.compile in its
# default mode, to keep the call short), then the odd-shape sweep as far as time allows.
set -uo pipefail
export OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > "$OUT/env.txt"
bash scripts/gpu-check.sh build > "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
ctest --test-dir build-gpu -L gpu --output-on-failure -V > "$OUT/logs/tests.log" 2>&1
echo "gpu tests exit $?"; grep -E "test cases|assertions" "$OUT/logs/tests.log" | tail -2
nvcc -O3 -gencode=arch=compute_90,code=sm_90 -o /tmp/mma_sync_peak bench/ceilings/mma_sync_peak.cu && /tmp/mma_sync_peak | tee "$OUT/mma_sync_peak.jsonl"
GEMM_COMPILE_MODE=default GEMM_VARIANTS="mma mma_gelu wgmma wgmma_bias wgmma_tanh wgmma_gelu wgmma_gelu_separate" \
    OUT=$OUT/logs bash scripts/gpu-check.sh gemm
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
OUT=$OUT/logs timeout 100 bash scripts/gpu-check.sh gemm-odd
grep -cE " PASS " "$OUT/logs/gemm_odd.log"; grep -cE "FAIL" "$OUT/logs/gemm_odd.log"
cd "$OUT/logs" && tar czf ../gemm-data.tgz gemm gemm_odd gemm.log gemm_odd.log 2>/dev/null
cd "$OUT" && cp logs/gemm_table.md logs/gemm_peers.jsonl . && gzip -c logs/tests.log > tests.log.gz && rm -rf logs
