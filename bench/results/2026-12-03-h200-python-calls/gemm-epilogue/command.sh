#!/usr/bin/env bash
# One device call: build, the python and gpu tests, the Python bench, then (GEMM=1) the wgmma
# epilogue variants without peers. Logs to $OUT.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
export OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT/logs"
bash scripts/gpu-check.sh build > "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
KJIT_NOTEBOOK_OUT="$OUT/logs/seed.ipynb" ctest --test-dir build-gpu -L "python|gpu" --output-on-failure -V > "$OUT/logs/tests.log" 2>&1
echo "tests exit $?"; grep -E "passed|failed|skipped|SKIPPED|FAILED" "$OUT/logs/tests.log" | tail -12
OUT=$OUT/logs bash scripts/gpu-check.sh python
if [ "${GEMM:-0}" = 1 ]; then
    GEMM_PEERS=0 GEMM_SHAPES="4096x4096x4096 8192x4096x4096" \
    GEMM_VARIANTS="wgmma wgmma_bias wgmma_tanh wgmma_tanh_fast wgmma_gelu wgmma_gelu_fast wgmma_pingpong wgmma_pingpong_gelu wgmma_pingpong_gelu_fast" \
        OUT=$OUT/logs bash scripts/gpu-check.sh gemm
    nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> "$OUT/logs/env.txt"
fi
cd "$OUT" && tar czf logs.tgz logs && cp logs/python_calls.log logs/python_calls.json logs/gemm_table.md . 2>/dev/null; rm -rf logs
