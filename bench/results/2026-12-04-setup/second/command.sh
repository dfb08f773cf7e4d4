#!/usr/bin/env bash
# Why first-call's children saw cuInit take 12 ms where `kjit run` takes 100 to 190: a process that
# holds CUDA initialized. kjit run back to back alone, then with another process holding cuInit;
# then first-call, which now asks a child whether there is a GPU, so it holds nothing.
set -uo pipefail
export OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > "$OUT/env.txt"
date -u >> "$OUT/env.txt"
{ cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/.deps/usr" -DKJIT_PYTHON=OFF &&
  cmake --build build-gpu --target kjit -j "$(nproc)"; } > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
export KJIT_CACHE_DIR=/tmp/kjit-cache
init='import json,sys; r=json.load(open(sys.argv[1]))[0]; print("driver_init_ms", round(r["driver_init_ms"],1), "context_ms", round(r["context_ms"],1))'
runs() { for k in 1 2 3; do build-gpu/kjit run --skip-ceiling --json /tmp/r.json > /dev/null 2>&1; echo "$1: $(python3 -c "$init" /tmp/r.json)"; done; }
runs "alone, back to back" | tee "$OUT/cuinit.txt"
python3 -c 'import ctypes, time; ctypes.CDLL("libcuda.so.1").cuInit(0); time.sleep(20)' &
holder=$!; sleep 3
runs "while another process holds cuInit" | tee -a "$OUT/cuinit.txt"
kill $holder; wait $holder 2>/dev/null; sleep 2
runs "alone again" | tee -a "$OUT/cuinit.txt"
timeout 150 build-gpu/kjit first-call configs/seed_vectorize.json --repeat 5 --json "$OUT/first_call.json" > "$OUT/first_call.txt" 2>&1
echo "first-call exit $?"; cat "$OUT/first_call.txt"
