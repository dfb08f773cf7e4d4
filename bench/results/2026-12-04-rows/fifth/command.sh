#!/usr/bin/env bash
# Issue 40, rows, fifth call: the small matrices where PyTorch is ahead (RMS norm and a transpose
# at 4096 × 768 bfloat16; layer norm beside them): each family's launch space tuned exhaustively,
# to see whether any launch of kjit's beats eager (7.6 µs) and torch.compile (6.2).
set -uo pipefail
export OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > "$OUT/env.txt"
{ cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/.deps/usr" -DKJIT_PYTHON=OFF &&
  cmake --build build-gpu --target kjit -j "$(nproc)"; } > "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
kjit=$PWD/build-gpu/kjit
export KJIT_CACHE_DIR=/tmp/kjit-cache
for cfg in rmsnorm.json transpose.json layernorm.json; do
  timeout 110 "$kjit" tune "configs/$cfg" --set dtype=bfloat16 --set "shape=[4096,768]" --set measure.max_ms=40 --strategy exhaustive --quiet \
      --json "$OUT/logs/tune_${cfg%.json}.json" > "$OUT/logs/tune_${cfg%.json}.log" 2>&1
  echo "== $cfg: exit $?"; grep -E -A8 "fastest|best" "$OUT/logs/tune_${cfg%.json}.log" | head -12
  "$kjit" run "configs/$cfg" --skip-ceiling --set dtype=bfloat16 --set "shape=[4096,768]" > "$OUT/logs/default_${cfg%.json}.log" 2>&1
  grep -E "variant|kernel .*cold|cold" "$OUT/logs/default_${cfg%.json}.log" | head -4
done 2>&1 | tee "$OUT/tunes.txt"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
cd "$OUT/logs" && tar czf ../data.tgz . && cd "$OUT" && rm -rf logs
