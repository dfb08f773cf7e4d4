#!/usr/bin/env bash
# The GEMM epilogue call: build, the gpu tests (odd shapes on every rung), the ladder's epilogue
# variants at the three shapes with the peers (torch.compile in its default mode, to
# keep the call short), then the odd-shape sweep as far as time allows. Logs to $OUT.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
export OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT/logs"
bash scripts/gpu-check.sh build > "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
ctest --test-dir build-gpu -L gpu --output-on-failure -V > "$OUT/logs/tests.log" 2>&1
echo "gpu tests exit $?"; grep -E "test cases|assertions" "$OUT/logs/tests.log" | tail -2
GEMM_COMPILE_MODE=default GEMM_VARIANTS="mma mma_gelu wgmma wgmma_bias wgmma_tanh wgmma_tanh_fast wgmma_gelu wgmma_gelu_fast wgmma_gelu_separate" \
    OUT=$OUT/logs bash scripts/gpu-check.sh gemm
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> "$OUT/logs/env.txt"
OUT=$OUT/logs timeout 120 bash scripts/gpu-check.sh gemm-odd
cd "$OUT/logs" && tar czf ../gemm-data.tgz gemm gemm_odd gemm.log gemm_odd.log 2>/dev/null
cd "$OUT" && cp logs/gemm_table.md logs/gemm_peers.jsonl logs/env.txt . && gzip -c logs/tests.log > tests.log.gz && rm -rf logs
