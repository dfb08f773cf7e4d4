#!/usr/bin/env bash
# Issue 42's close-out on the H200: the core built with its precompiled headers, every GPU test,
# and `kjit first-call` whose explanation now counts the compile that ran during CUDA start-up
# once (shares that add up to the wall).
set -uo pipefail
export OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > "$OUT/env.txt"
date -u >> "$OUT/env.txt"
{ cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/.deps/usr" -DKJIT_PYTHON=OFF &&
  cmake --build build-gpu --target kjit gpu_tests -j "$(nproc)"; } > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
export KJIT_CACHE_DIR=/tmp/kjit-cache
timeout 330 build-gpu/tests/gpu_tests > "$OUT/gpu_tests.txt" 2>&1; echo "gpu_tests exit $?"; tail -3 "$OUT/gpu_tests.txt"
timeout 120 build-gpu/kjit first-call configs/seed_vectorize.json --repeat 5 --json "$OUT/first_call.json" > "$OUT/first_call.txt" 2>&1
echo "first-call exit $?"; tail -8 "$OUT/first_call.txt"
# cuInit: 104 ms in the README's run, 11-12 ms in first-call's children. The README's was a process
# on a GPU left idle; first-call's run back to back. Both, measured: three runs after 15 s of
# nothing, then three back to back.
nvidia-smi -q | grep -i -m1 "persistence mode" >> "$OUT/env.txt"
init='import json,sys; r=json.load(open(sys.argv[1]))[0]; print("driver_init_ms", round(r["driver_init_ms"],1), "context_ms", round(r["context_ms"],1))'
for k in 1 2 3; do sleep 15; build-gpu/kjit run --skip-ceiling --json /tmp/idle$k.json > /dev/null 2>&1; echo "after 15 s idle: $(python3 -c "$init" /tmp/idle$k.json)"; done | tee "$OUT/cuinit.txt"
for k in 1 2 3; do build-gpu/kjit run --skip-ceiling --json /tmp/busy$k.json > /dev/null 2>&1; echo "back to back: $(python3 -c "$init" /tmp/busy$k.json)"; done | tee -a "$OUT/cuinit.txt"
