#!/usr/bin/env bash
# Issue 40 at the defaults after the first call's rules: rows of at most 4 KiB on a warp each, 4
# a block of 128; a transpose whose tiles leave the SMs' threads to spare in 256 threads a tile.
# The GPU test of row kernels at odd shapes (with the warp-per-row variants) first, then issue
# 40's benchmark (bench/defaults/run.py: every case at the defaults, two rounds, the peers in the
# same call) and its table.
set -uo pipefail
export OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > "$OUT/env.txt"
{ cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/.deps/usr" -DKJIT_PYTHON=OFF &&
  cmake --build build-gpu --target kjit gpu_tests -j "$(nproc)"; } > "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
kjit=$PWD/build-gpu/kjit
export KJIT_CACHE_DIR=/tmp/kjit-cache
pack() { (cd "$OUT" && tar czf data.tgz logs defaults-run 2>/dev/null); }
timeout 240 build-gpu/tests/gpu_tests -tc="row kernels verify*" > "$OUT/logs/gpu_tests_rows.txt" 2>&1
echo "gpu_tests rows: exit $?"; tail -4 "$OUT/logs/gpu_tests_rows.txt" | tee "$OUT/gpu_tests.txt"
timeout 330 python3 bench/defaults/run.py "$kjit" "$OUT/defaults-run" --rounds 2 > "$OUT/logs/defaults.txt" 2>&1
echo "defaults: exit $?"
python3 scripts/defaults_table.py "$OUT/defaults-run" > "$OUT/table.md" 2>&1; cat "$OUT/table.md"
pack
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
