#!/usr/bin/env bash
# Issue 40, long rows, fourth call: the first pass over a row in groups of copies unrolled, so
# each wait is one instruction (the third call's waits were a chain of compares at every second
# vector; layer norm took 232 µs in one group and 252-263 in 2-8). Layer norm at 1, 4 and 8
# groups; the row cases at the defaults beside one group; two rounds; the GPU test of row kernels
# at odd shapes.
set -uo pipefail
export OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > "$OUT/env.txt"
{ cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/.deps/usr" -DKJIT_PYTHON=OFF &&
  cmake --build build-gpu --target kjit gpu_tests -j "$(nproc)"; } > "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
kjit=$PWD/build-gpu/kjit
export KJIT_CACHE_DIR=/tmp/kjit-cache
pack() { (cd "$OUT/logs" && tar czf ../data.tgz .); }
rows() {
  local name=$1 cfg=$2 cols=$3; shift 3
  timeout 60 "$kjit" run "configs/$cfg" --skip-ceiling --set dtype=bfloat16 --set "shape=[1024,$cols]" "$@" \
    --json "$OUT/logs/$name.json" > "$OUT/logs/$name.txt" 2>&1
  echo "$name: exit $? $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); r=r[0] if isinstance(r,list) else r; print(r.get("status"), "cold_us", round(1000*(r.get("kernel_cold_median_ms") or 0),1), "regs", r.get("registers"), r.get("variant"))' "$OUT/logs/$name.json" 2>/dev/null || tail -2 "$OUT/logs/$name.txt")"
}
for round in 1 2; do
  for cols in 128256 50257; do for g in 1 4 8; do
    rows "r${round}_${cols}_layernorm_groups$g" layernorm.json $cols --set launch.copy_groups=$g
  done; done
  for cols in 128256 50257 32000; do for cfg in softmax rmsnorm layernorm; do
    rows "r${round}_${cols}_${cfg}_default" $cfg.json $cols
    rows "r${round}_${cols}_${cfg}_groups1" $cfg.json $cols --set launch.copy_groups=1
  done; done
done 2>&1 | tee "$OUT/rows.txt"
pack
timeout 300 build-gpu/tests/gpu_tests -tc="row kernels verify at odd shapes*" > "$OUT/logs/gpu_rows.log" 2>&1
echo "gpu_tests rows: exit $?"; tail -4 "$OUT/logs/gpu_rows.log"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
pack
