#!/usr/bin/env bash
# The final code's check: build, then the gpu and python tests. Logs to $OUT.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
export OUT=${OUT:-$PWD/gpu-results}
bash scripts/gpu-check.sh build > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
ctest --test-dir build-gpu -L "gpu|python" --output-on-failure -V > "$OUT/tests.log" 2>&1
echo "tests exit $?"; grep -E "test cases|assertions|passed|failed" "$OUT/tests.log" | tail -6
gzip "$OUT/tests.log"
