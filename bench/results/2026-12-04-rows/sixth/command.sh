#!/usr/bin/env bash
# Issue 40, rows, sixth call: does the fifth call's finding at 4096 × 768 hold at other shapes?
# The transpose's space (tile, layout, block) and RMS norm's (row cache, cluster, streaming,
# block) tuned exhaustively at more shapes of real models, bfloat16; each tune's best and the
# default's point printed.
set -uo pipefail
export OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > "$OUT/env.txt"
{ cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/.deps/usr" -DKJIT_PYTHON=OFF &&
  cmake --build build-gpu --target kjit -j "$(nproc)"; } > "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
kjit=$PWD/build-gpu/kjit
export KJIT_CACHE_DIR=/tmp/kjit-cache
tune() {
  local cfg=$1 rows=$2 cols=$3 name=${1%.json}_$2x$3
  timeout 60 "$kjit" tune "configs/$cfg" --set dtype=bfloat16 --set "shape=[$rows,$cols]" --set measure.max_ms=40 --strategy exhaustive --quiet \
      --json "$OUT/logs/tune_$name.json" > "$OUT/logs/tune_$name.log" 2>&1
  echo "== $name: exit $?"; grep -E -A3 "^  best" "$OUT/logs/tune_$name.log" | head -4
}
for shape in "4096 4096" "4096 11008" "11008 4096" "8192 768" "1024 768" "2048 5120"; do tune transpose.json $shape; done 2>&1 | tee "$OUT/tunes.txt"
for shape in "8192 768" "16384 768" "4096 1024" "4096 2048" "4096 4096"; do tune rmsnorm.json $shape; done 2>&1 | tee -a "$OUT/tunes.txt"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
cd "$OUT/logs" && tar czf ../data.tgz . && cd "$OUT" && rm -rf logs
