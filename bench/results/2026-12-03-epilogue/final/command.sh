#!/usr/bin/env bash
# The final call: the session's last code built, its gpu and Python tests, and the odd-shape
# sweep (every rung and dtype at M, N, K in {1, 17, 1000, 4097}) as far as 100 s allow.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
export OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > "$OUT/env.txt"
git log --oneline -1 >> "$OUT/env.txt" 2>/dev/null
bash scripts/gpu-check.sh build > "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
ctest --test-dir build-gpu -L "gpu|python" --output-on-failure -V > "$OUT/logs/tests.log" 2>&1
echo "gpu and python tests exit $?"; grep -E "test cases|assertions|passed|failed" "$OUT/logs/tests.log" | tail -6
OUT=$OUT/logs timeout 100 bash scripts/gpu-check.sh gemm-odd
grep -cE " PASS$" "$OUT/logs/gemm_odd.log"; grep -cE "FAIL" "$OUT/logs/gemm_odd.log"; grep -c "^== " "$OUT/logs/gemm_odd.log"
cd "$OUT/logs" && tar czf ../gemm-odd.tgz gemm_odd gemm_odd.log 2>/dev/null
cd "$OUT" && gzip -c logs/tests.log > tests.log.gz && rm -rf logs
