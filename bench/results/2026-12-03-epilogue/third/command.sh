#!/usr/bin/env bash
# The third call: build, the gpu tests, the mma rung (operands loaded a step ahead) tuned around
# its auto launch at 8192³, then mma alone and with its fused GELU at the three shapes
# with the peers, and the odd-shape sweep as far as time allows.
set -uo pipefail
export OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > "$OUT/env.txt"
bash scripts/gpu-check.sh build > "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
ctest --test-dir build-gpu -L gpu --output-on-failure -V > "$OUT/logs/tests.log" 2>&1
echo "gpu tests exit $?"; grep -E "test cases|assertions" "$OUT/logs/tests.log" | tail -2
GEMM_TUNE_AXES='{"launch.tile_k":[32,64],"launch.stages":[3,4,5],"launch.group_m":[8,16]}' OUT=$OUT/logs bash scripts/gpu-check.sh gemm-tune
GEMM_COMPILE_MODE=default GEMM_VARIANTS="mma mma_gelu wgmma" OUT=$OUT/logs bash scripts/gpu-check.sh gemm
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
OUT=$OUT/logs timeout 150 bash scripts/gpu-check.sh gemm-odd
grep -cE " PASS$" "$OUT/logs/gemm_odd.log"; grep -cE "FAIL" "$OUT/logs/gemm_odd.log"
cd "$OUT/logs" && tar czf ../gemm-data.tgz gemm gemm_odd gemm.log gemm_odd.log gemm_tune.json gemm_tune.log 2>/dev/null
cd "$OUT" && cp logs/gemm_table.md logs/gemm_peers.jsonl . && gzip -c logs/tests.log > tests.log.gz && rm -rf logs
