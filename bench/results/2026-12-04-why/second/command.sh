#!/usr/bin/env bash
# Issue 44, second call: the GPU tests on this build (the runner and the Driver API GPU gained the
# counter pass), and `kjit sweep --metrics=memory` over configs/sweep_softmax.json: counters per point.
set -uo pipefail
export OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > "$OUT/env.txt"
{ cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/.deps/usr" -DKJIT_PYTHON=OFF &&
  cmake --build build-gpu --target kjit gpu_tests -j "$(nproc)"; } > "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
export KJIT_CACHE_DIR=/tmp/kjit-cache
echo "== GPU tests"
timeout 400 build-gpu/tests/gpu_tests > "$OUT/gpu_tests.txt" 2>&1; echo "gpu_tests exit $?"; tail -4 "$OUT/gpu_tests.txt"
echo "== sweep --metrics=memory"
timeout 150 build-gpu/kjit sweep configs/sweep_softmax.json --metrics=memory --quiet --json "$OUT/logs/sweep.json" > "$OUT/sweep.txt" 2>&1
echo "sweep exit $?"
python3 - "$OUT/logs/sweep.json" <<'PY' | tee "$OUT/sweep_metrics.txt"
import json, sys
for r in json.load(open(sys.argv[1])):
    print(r.get("sweep_point"), r.get("status"), round(1000 * (r.get("kernel_cold_median_ms") or 0), 1), "us",
          "DRAM/model", r.get("dram_bytes_over_model") and round(r["dram_bytes_over_model"], 3),
          "DRAM %", r.get("metric_dram_throughput_pct") and round(r["metric_dram_throughput_pct"], 1))
PY
tar czf "$OUT/logs.tar.gz" -C "$OUT" logs && rm -rf "$OUT/logs"
