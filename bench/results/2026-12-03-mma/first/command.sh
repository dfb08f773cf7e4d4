#!/usr/bin/env bash
# The first call: build, then the mma main-loop experiment (bench/results/2026-12-03-mma/experiment).
set -uo pipefail
export OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > "$OUT/env.txt"
bash scripts/gpu-check.sh build > "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
export KJIT_CACHE_DIR=/tmp/kjit-gpu-cache
bash bench/results/2026-12-03-mma/experiment/run.sh "$PWD/build-gpu/kjit" "$OUT/logs"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
cd "$OUT/logs" && tar czf ../exp-data.tgz exp exp.log 2>/dev/null
cd "$OUT" && rm -rf logs
