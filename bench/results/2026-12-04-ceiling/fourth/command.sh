#!/usr/bin/env bash
# The session's last build on the H200: the GPU tests (the GEMM cases with launch.buffers), and a
# sweep on the GPU with its compile stage reported.
set -uo pipefail
export OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > "$OUT/env.txt"
date -u >> "$OUT/env.txt"
{ cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/.deps/usr" -DKJIT_PYTHON=OFF &&
  cmake --build build-gpu --target kjit gpu_tests -j "$(nproc)"; } > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
export KJIT_CACHE_DIR=/tmp/kjit-cache
timeout 450 build-gpu/tests/gpu_tests > "$OUT/gpu_tests.txt" 2>&1; echo "gpu_tests exit $?"; tail -3 "$OUT/gpu_tests.txt"
timeout 100 script -qc "build-gpu/kjit sweep configs/sweep_softmax_cluster.json --json /tmp/s.json" /dev/null > "$OUT/sweep_tty.txt" 2>&1
echo "sweep exit $?"; tr '\r' '\n' < "$OUT/sweep_tty.txt" | grep -E "^.\[Kcompile|^.\[Krun" | sed -n '1p;$p'; tail -2 "$OUT/sweep_tty.txt"
