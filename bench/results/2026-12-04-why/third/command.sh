#!/usr/bin/env bash
# Issue 44, third call: the roofline. The device's ceilings (copy, FMA probe, kjit's 8192³
# bfloat16 GEMM) measured once and kept; the launch sweep of the seed's hidden layer and the GEMM
# ladder (configs/mlp_layer.json: each rung, fused and separate) with their roofline columns.
set -uo pipefail
export OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > "$OUT/env.txt"
{ cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/.deps/usr" -DKJIT_PYTHON=OFF &&
  cmake --build build-gpu --target kjit -j "$(nproc)"; } > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
kjit=$PWD/build-gpu/kjit
export KJIT_CACHE_DIR=/tmp/kjit-cache-roofline
echo "== one GEMM run: the ceilings measured, the roofline line"
timeout 200 "$kjit" run configs/mlp_layer.json --json "$OUT/mlp_run.json" > "$OUT/mlp_run.txt" 2>&1; echo "exit $?"
grep -E "compute:|roofline:|throughput:" "$OUT/mlp_run.txt"
cat "$KJIT_CACHE_DIR"/ceilings/*.json | tee "$OUT/ceilings.json"
echo "== the launch sweep of the hidden layer"
timeout 200 "$kjit" sweep configs/sweep_launch.json --quiet --json "$OUT/sweep_launch.json" > "$OUT/sweep_launch.txt" 2>&1; echo "exit $?"
echo "== the GEMM ladder"
timeout 240 "$kjit" sweep configs/mlp_layer.json --quiet --json "$OUT/gemm_ladder.json" > "$OUT/gemm_ladder.txt" 2>&1; echo "exit $?"
python3 - "$OUT/sweep_launch.json" "$OUT/gemm_ladder.json" <<'PY' | tee "$OUT/roofline.txt"
import json, sys
for path in sys.argv[1:]:
    print("==", path.rsplit("/", 1)[-1])
    for r in json.load(open(path)):
        ai = r.get("arithmetic_intensity")
        print(f'{r.get("sweep_point")}: {r.get("status")} {1000 * (r.get("kernel_cold_median_ms") or 0):.1f} us, '
              f'{r.get("tflops") or 0:.2f} TFLOP/s, intensity {ai if ai is None else round(ai, 2)}, '
              f'{r.get("roof_bound")}-bound, {r.get("percent_of_roof") or 0:.0f} % of roof ({r.get("flops_unit")})')
PY
