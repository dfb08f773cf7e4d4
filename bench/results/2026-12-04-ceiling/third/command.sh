#!/usr/bin/env bash
# Issue 44 and 42, the session's last build on the H200: the GPU tests; the counter pass (user
# replay, a flushed L2 each pass) on the configs that fit in the L2 and on row_sum; kjit tune
# --metrics; the ceilings once more; a sweep with constraints; merge of a .json.gz.
set -uo pipefail
export OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > "$OUT/env.txt"
date -u >> "$OUT/env.txt"
{ cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/.deps/usr" -DKJIT_PYTHON=OFF &&
  cmake --build build-gpu --target kjit gpu_tests -j "$(nproc)"; } > "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
grep -i "zlib" "$OUT/logs/build.log" | head -2
kjit=$PWD/build-gpu/kjit
export KJIT_CACHE_DIR=/tmp/kjit-cache
timeout 400 build-gpu/tests/gpu_tests > "$OUT/gpu_tests.txt" 2>&1; echo "gpu_tests exit $?"; tail -3 "$OUT/gpu_tests.txt"
for c in hidden_layer leaky_relu_expr row_sum softmax mlp_layer; do
  timeout 120 "$kjit" run configs/$c.json --metrics=memory --json "$OUT/logs/m_$c.json" > "$OUT/logs/m_$c.txt" 2>&1
  echo "$c exit $?: $(grep -E "DRAM bytes counted|roofline:" "$OUT/logs/m_$c.txt" | tr -s ' ' | tr '\n' ' ')"
done 2>&1 | tee "$OUT/metrics.txt"
echo "ceilings: $(cat $KJIT_CACHE_DIR/ceilings/*.json | tr -d '\n ')" | tee -a "$OUT/metrics.txt"
timeout 200 "$kjit" tune configs/tune_layernorm.json --strategy random --budget 6 --metrics=memory --json "$OUT/logs/tune.json" > "$OUT/tune.txt" 2>&1
echo "tune exit $?" | tee -a "$OUT/tune.txt"; head -12 "$OUT/tune.txt"
timeout 200 "$kjit" sweep configs/sweep_launch.json --set 'sweep.constraints=["block * vector_width <= 1024"]' --quiet --json "$OUT/logs/sweep.json" > "$OUT/sweep.txt" 2>&1
echo "sweep exit $?"; tail -2 "$OUT/sweep.txt"
gzip -k "$OUT/logs/sweep.json" && "$kjit" merge "$OUT/logs/sweep.json.gz" > "$OUT/logs/merge.txt" 2>&1; echo "merge of .json.gz exit $?"; tail -1 "$OUT/logs/merge.txt"
tar czf "$OUT/logs.tar.gz" -C "$OUT" logs && rm -rf "$OUT/logs"
