#!/usr/bin/env bash
# Issue 40, the split's third call: every public shape of bench/defaults at the defaults after
# wgmma's split depth, its 128 × 192 tile and A's rows copied as a decode step has them; two
# rounds alternated, with the peers in the same run.
set -uo pipefail
export OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > "$OUT/env.txt"
{ cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/.deps/usr" -DKJIT_PYTHON=OFF &&
  cmake --build build-gpu --target kjit -j "$(nproc)"; } > "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
kjit=$PWD/build-gpu/kjit
export KJIT_CACHE_DIR=/tmp/kjit-cache
timeout 400 python3 bench/defaults/run.py "$kjit" "$OUT/logs" --rounds 2
python3 scripts/defaults_table.py "$OUT/logs" | tee "$OUT/defaults_table.md"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
cd "$OUT/logs" && tar czf ../defaults-data.tgz . && cd "$OUT" && rm -rf logs
