#!/usr/bin/env bash
# Issue 44, fourth call, on the session's last build: the GPU tests (now with the FMA and tensor
# ceilings in every sweep), and the causal softmax's DRAM bytes against the row model that counts
# only the vectors its mask lets it read; the softmax beside it.
set -uo pipefail
export OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > "$OUT/env.txt"
{ cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/.deps/usr" -DKJIT_PYTHON=OFF &&
  cmake --build build-gpu --target kjit gpu_tests -j "$(nproc)"; } > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
export KJIT_CACHE_DIR=/tmp/kjit-cache
timeout 400 build-gpu/tests/gpu_tests > "$OUT/gpu_tests.txt" 2>&1; echo "gpu_tests exit $?"; tail -3 "$OUT/gpu_tests.txt"
for c in causal_softmax softmax; do
  timeout 120 build-gpu/kjit run configs/$c.json --metrics=memory > "$OUT/$c.txt" 2>&1; echo "$c exit $?"
  grep -E "bytes read from DRAM|bytes written to DRAM|DRAM bytes counted|roofline:|throughput:" "$OUT/$c.txt"
done
