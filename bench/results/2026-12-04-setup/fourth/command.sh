#!/usr/bin/env bash
# Issue 40's long rows: clusters that loop over the rows (each block holding its share of two rows,
# the next one's copies in flight) and rows that start inside a vector reading a norm's weights by
# element. Every GPU test (odd shapes through clusters that loop, norms at odd widths), then
# softmax, layer norm and RMS norm over 1024 × 128,256 bfloat16 in clusters of 8 blocks of 128 at
# several grids (blocks; 8192 is a cluster per row), and the norms over 50,257 columns at the
# defaults, each beside a same-size copy's ceiling (kjit measures it).
set -uo pipefail
export OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > "$OUT/env.txt"
date -u >> "$OUT/env.txt"
{ cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/.deps/usr" -DKJIT_PYTHON=OFF &&
  cmake --build build-gpu --target kjit gpu_tests -j "$(nproc)"; } > "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
kjit=$PWD/build-gpu/kjit
export KJIT_CACHE_DIR=/tmp/kjit-cache
timeout 360 build-gpu/tests/gpu_tests > "$OUT/gpu_tests.txt" 2>&1; echo "gpu_tests exit $?"; tail -3 "$OUT/gpu_tests.txt"
grep -m6 -B2 -A12 "ERROR" "$OUT/gpu_tests.txt" | head -60
summary='import json,sys; r=json.load(open(sys.argv[1])); r=r[0] if isinstance(r,list) else r; p=r.get("percent_of_ceiling"); print(r.get("status"), "cold_us", round(1000*(r.get("kernel_cold_median_ms") or 0),1), "| % of copy", round(p,1) if p else None, "|", r.get("variant"))'
run() {  # name, config, launch
  timeout 60 "$kjit" run configs/$2.json --set dtype=bfloat16 --set "shape=[1024,$4]" --set "launch=$3" --json "$OUT/logs/$1.json" > "$OUT/logs/$1.txt" 2>&1
  echo "$1: $(python3 -c "$summary" "$OUT/logs/$1.json" 2>/dev/null || tail -2 "$OUT/logs/$1.txt")"
}
for round in 1 2; do
  for op in softmax layernorm rmsnorm; do
    run ${op}_auto_$round $op '{}' 128256
    for grid in 4096 2048 1024 768 512; do
      run ${op}_grid${grid}_$round $op "{\"row_cache\":\"shared\",\"cluster\":8,\"block\":128,\"streaming\":true,\"grid\":$grid}" 128256
    done
  done
done | tee "$OUT/long_rows.txt"
for op in softmax layernorm rmsnorm; do run ${op}_50257 $op '{}' 50257; done | tee "$OUT/odd_rows.txt"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
cd "$OUT/logs" && tar czf ../data.tgz . && cd "$OUT" && rm -rf logs
