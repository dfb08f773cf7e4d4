#!/usr/bin/env bash
# Issue 40, rows that start inside a vector (a vocabulary of 50,257): verified at odd shapes on the
# GPU, then softmax over 1024 rows of 32,000, 50,257 and 128,256 bfloat16 at the defaults with the
# peers (two rounds), the launches long rows might take instead (blocks that loop over rows with
# the next row copied during this one; clusters of 2 and 4), and Nsight Compute on the defaults.
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
echo "gpu_tests exit $?"; tail -4 "$OUT/logs/gpu_rows.log"
echo "== defaults and peers"
timeout 240 python3 bench/defaults/run.py "$kjit" "$OUT/logs" --rounds 2 --only softmax_32000,softmax_50257,softmax_128256
python3 scripts/defaults_table.py "$OUT/logs" | tee "$OUT/defaults_table.md"
# point NAME COLS [more --set]: softmax over 1024 rows of COLS bfloat16 at a launch, one line
point() {
  local name=$1 cols=$2; shift 2
  timeout 60 "$kjit" run configs/softmax.json --skip-ceiling --set dtype=bfloat16 --set "shape=[1024,$cols]" "$@" \
    --json "$OUT/logs/$name.json" > "$OUT/logs/$name.txt" 2>&1
  echo "$name: exit $? $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); r=r[0] if isinstance(r,list) else r; print(r.get("status"), "cold_us", round(1000*(r.get("kernel_cold_median_ms") or 0),1), "label", r.get("variant"))' "$OUT/logs/$name.json" 2>/dev/null || tail -2 "$OUT/logs/$name.txt")"
}
echo "== launches"
for round in 1; do
  for cols in 32000 50257 128256; do
    point "r${round}_${cols}_default" $cols
    [ $cols = 50257 ] && point "r${round}_${cols}_width1" $cols --set launch.vector_width=1
    for grid in "\"resident\"" 132 264; do for block in 512 1024; do
      point "r${round}_${cols}_loop_${grid//\"/}_${block}" $cols --set launch.row_cache='"shared"' --set "launch.grid=$grid" --set launch.block=$block --set launch.streaming=true
    done; done
    for cluster in 2 4; do for block in 256 512 1024; do
      point "r${round}_${cols}_cluster${cluster}_${block}" $cols --set launch.row_cache='"shared"' --set launch.cluster=$cluster --set launch.block=$block --set launch.streaming=true
    done; done
  done
done 2>&1 | tee "$OUT/launches.txt"
echo "== Nsight Compute, the defaults"
sections=(--section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy --section WarpStateStats)
for cols in 32000 50257 128256; do
  timeout 120 ncu --clock-control none -k regex:softmax --launch-skip 3 --launch-count 1 "${sections[@]}" \
    "$kjit" run configs/softmax.json --skip-ceiling --set dtype=bfloat16 --set "shape=[1024,$cols]" --set measure.warmup=2 --set measure.repeat=3 \
    > "$OUT/logs/ncu_$cols.txt" 2>&1; echo "ncu $cols: exit $?"
  grep -E "Duration|DRAM Throughput|Memory Throughput|L2 Hit|Achieved Occupancy|Theoretical Occupancy|Registers Per|Block Size|Grid Size|Dynamic Shared|Stall|One or More|No Eligible|Cluster" "$OUT/logs/ncu_$cols.txt" | head -30
done
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
cd "$OUT/logs" && tar czf ../data.tgz . && cd "$OUT" && rm -rf logs
