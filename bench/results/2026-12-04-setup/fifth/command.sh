#!/usr/bin/env bash
# The session's last code on the H200: every GPU test, then the norms over 1024 rows of 50,257
# bfloat16 columns (rows that start inside a vector, their weights read by element with 32-bit
# column arithmetic) beside 50,256 columns (aligned), two rounds, at the defaults.
set -uo pipefail
export OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > "$OUT/env.txt"
date -u >> "$OUT/env.txt"
{ cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/.deps/usr" -DKJIT_PYTHON=OFF &&
  cmake --build build-gpu --target kjit gpu_tests -j "$(nproc)"; } > "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
kjit=$PWD/build-gpu/kjit
export KJIT_CACHE_DIR=/tmp/kjit-cache
timeout 330 build-gpu/tests/gpu_tests > "$OUT/gpu_tests.txt" 2>&1; echo "gpu_tests exit $?"; tail -3 "$OUT/gpu_tests.txt"
grep -m6 -B2 -A12 "ERROR" "$OUT/gpu_tests.txt" | head -60
summary='import json,sys; r=json.load(open(sys.argv[1])); r=r[0] if isinstance(r,list) else r; p=r.get("percent_of_ceiling"); print(r.get("status"), "cold_us", round(1000*(r.get("kernel_cold_median_ms") or 0),1), "| % of copy", round(p,1) if p else None, "|", r.get("variant"))'
for round in 1 2; do for cols in 50257 50256; do for op in softmax layernorm rmsnorm; do
  name=${op}_${cols}_$round
  timeout 60 "$kjit" run configs/$op.json --set dtype=bfloat16 --set "shape=[1024,$cols]" --json "$OUT/logs/$name.json" > "$OUT/logs/$name.txt" 2>&1
  echo "$name: $(python3 -c "$summary" "$OUT/logs/$name.json" 2>/dev/null || tail -2 "$OUT/logs/$name.txt")"
done; done; done | tee "$OUT/odd_rows.txt"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
cd "$OUT/logs" && tar czf ../data.tgz . && cd "$OUT" && rm -rf logs
