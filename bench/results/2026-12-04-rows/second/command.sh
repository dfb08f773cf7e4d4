#!/usr/bin/env bash
# Issue 40, rows that start inside a vector, second call: the edge test made per vector (from–to
# bounds in 32-bit) rather than per element in 64-bit; the odd-shape row tests again (a launch of
# exactly 48 KiB of dynamic shared memory beside static words failed in the first call); softmax
# over 1024 rows of 50,257 bfloat16 at launches that hold two rows per SM, and at fast math, to
# see what bounds it; two rounds alternated.
set -uo pipefail
export OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > "$OUT/env.txt"
{ cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/.deps/usr" -DKJIT_PYTHON=OFF &&
  cmake --build build-gpu --target kjit gpu_tests -j "$(nproc)"; } > "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
kjit=$PWD/build-gpu/kjit
export KJIT_CACHE_DIR=/tmp/kjit-cache
echo "== row kernels at odd shapes"
timeout 300 build-gpu/tests/gpu_tests -tc="row kernels verify at odd shapes*" > "$OUT/logs/gpu_rows.log" 2>&1
echo "gpu_tests exit $?"; tail -3 "$OUT/logs/gpu_rows.log"; grep -m3 -A8 "ERROR" "$OUT/logs/gpu_rows.log"
point() {
  local name=$1 cols=$2; shift 2
  timeout 60 "$kjit" run configs/softmax.json --skip-ceiling --set dtype=bfloat16 --set "shape=[1024,$cols]" "$@" \
    --json "$OUT/logs/$name.json" > "$OUT/logs/$name.txt" 2>&1
  echo "$name: exit $? $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); r=r[0] if isinstance(r,list) else r; print(r.get("status"), "cold_us", round(1000*(r.get("kernel_cold_median_ms") or 0),1), "regs", r.get("registers"), "|", r.get("variant"))' "$OUT/logs/$name.json" 2>/dev/null || tail -2 "$OUT/logs/$name.txt")"
}
shared=(--set launch.row_cache='"shared"' --set launch.streaming=true)
echo "== launches"
for round in 1 2; do
  for cols in 50257 32000; do
    point "r${round}_${cols}_default" $cols
    point "r${round}_${cols}_width1" $cols --set launch.vector_width=1
    point "r${round}_${cols}_fast" $cols --set compile.fast_math=true
    point "r${round}_${cols}_online" $cols --set 'stages[2].formula="online"'
    point "r${round}_${cols}_b512" $cols "${shared[@]}" --set launch.block=512
    point "r${round}_${cols}_b1024_min2" $cols "${shared[@]}" --set launch.block=1024 --set launch.min_blocks_per_sm=2
    point "r${round}_${cols}_b512_min2" $cols "${shared[@]}" --set launch.block=512 --set launch.min_blocks_per_sm=2
    point "r${round}_${cols}_b256_c2" $cols "${shared[@]}" --set launch.block=256 --set launch.cluster=2
  done
done 2>&1 | tee "$OUT/launches.txt"
echo "== SASS: instructions and MUFU of the default and width 1 at 50257"
for f in $(find /tmp/kjit-cache -name program.cubin); do
  echo "$f $(cuobjdump -sass "$f" 2>/dev/null | grep -cE '^\s+/\*[0-9a-f]{4}\*/') instructions, $(cuobjdump -sass "$f" 2>/dev/null | grep -c MUFU) MUFU"
done > "$OUT/logs/sass_counts.txt" 2>&1; head -30 "$OUT/logs/sass_counts.txt"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
cd "$OUT/logs" && tar czf ../data.tgz . && cd "$OUT" && rm -rf logs
