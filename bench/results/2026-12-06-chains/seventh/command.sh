#!/usr/bin/env bash
# The division by a constant as a product by its reciprocal (16-bit results, fast math) on the
# GPU beyond soft-capping: the gpu tests of every shipped config and every activation in every
# storage type, and maps and a softmax that divide by constants in each dtype, verified.
set -uo pipefail
export OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > "$OUT/env.txt"
{ cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/.deps/usr" -DKJIT_PYTHON=OFF &&
  cmake --build build-gpu --target kjit gpu_tests -j "$(nproc)"; } > "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
kjit=$PWD/build-gpu/kjit
export KJIT_CACHE_DIR=/tmp/kjit-cache
timeout 200 build-gpu/tests/gpu_tests -tc="every shipped config*,every activation*" > "$OUT/logs/gpu_tests.log" 2>&1
echo "gpu_tests: exit $?"; tail -3 "$OUT/logs/gpu_tests.log"; grep -m5 -A12 "ERROR" "$OUT/logs/gpu_tests.log"
for dtype in bfloat16 float16 float32; do
  for e in "x / 3 + x / 7" "x / 1e-3" "(x + 1) / 30 - x / 0.1"; do
    timeout 30 "$kjit" run configs/leaky_relu_expr.json --set dtype=$dtype --set "stages[0].expr=\"$e\"" --set measure.repeat=5 \
      --skip-ceiling --json "$OUT/logs/map.json" > "$OUT/logs/map.txt" 2>&1
    echo "$dtype '$e': exit $? $(grep -E '^  check' "$OUT/logs/map.txt")"
  done
  timeout 30 "$kjit" run configs/softmax.json --set dtype=$dtype --set 'stages[1].expr="exp((x - m) / 3)"' --set measure.repeat=5 --skip-ceiling \
    > "$OUT/logs/softmax.txt" 2>&1
  echo "$dtype softmax with exp((x - m) / 3): exit $? $(grep -E '^  check' "$OUT/logs/softmax.txt")"
done 2>&1 | tee "$OUT/division.txt"
(cd "$OUT/logs" && tar czf ../data.tgz .)
