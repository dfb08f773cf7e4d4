#!/usr/bin/env bash
# The second call: build, the gpu and Python tests, the mma rung's tune around its auto launch
# (with the whole-tile copies), then the ladder's epilogue variants at the three shapes
# with the peers (torch.compile in its default mode), a second sample of the first call's.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
export OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > "$OUT/env.txt"
bash scripts/gpu-check.sh build > "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
ctest --test-dir build-gpu -L "gpu|python" --output-on-failure -V > "$OUT/logs/tests.log" 2>&1
echo "gpu and python tests exit $?"; grep -E "test cases|assertions|passed|failed" "$OUT/logs/tests.log" | tail -6
GEMM_TUNE_AXES='{"launch.tile_k":[32,64],"launch.stages":[3,4,5],"launch.group_m":[8,16]}' OUT=$OUT/logs bash scripts/gpu-check.sh gemm-tune
GEMM_COMPILE_MODE=default GEMM_VARIANTS="mma mma_gelu wgmma wgmma_bias wgmma_tanh wgmma_gelu" \
    OUT=$OUT/logs bash scripts/gpu-check.sh gemm
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
cd "$OUT/logs" && tar czf ../gemm-data.tgz gemm gemm.log gemm_tune.json gemm_tune.log 2>/dev/null
cd "$OUT" && cp logs/gemm_table.md logs/gemm_peers.jsonl . && gzip -c logs/tests.log > tests.log.gz && rm -rf logs
