#!/usr/bin/env bash
# The third call, the session's final code: build; the gpu and Python tests; the mma rung tuned
# at 8192³ around the second call's best launch; mma (at the tune's best), its fused tanh and
# GELU, and wgmma at the issue's three shapes with the peers (torch.compile in its default mode);
# mma at its auto launch at the same shapes, 2 rounds; then the odd-shape sweep (every rung and
# dtype at M, N, K in {1, 17, 1000, 4097}) as far as 150 s allow.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
export OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > "$OUT/env.txt"
bash scripts/gpu-check.sh build > "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
ctest --test-dir build-gpu -L "gpu|python" --output-on-failure -V > "$OUT/logs/tests.log" 2>&1
echo "gpu and python tests exit $?"; grep -E "test cases|assertions|passed|failed" "$OUT/logs/tests.log" | tail -6
GEMM_TUNE_AXES='{"launch.tile_m":[256],"launch.tile_n":[128],"launch.warps_m":[2,4],"launch.warps_n":[2,4],"launch.tile_k":[32,64],"launch.stages":[3,4]}' \
    OUT=$OUT/logs bash scripts/gpu-check.sh gemm-tune
GEMM_COMPILE_MODE=default GEMM_VARIANTS="mma mma_tanh mma_gelu wgmma" OUT=$OUT/logs bash scripts/gpu-check.sh gemm
mkdir -p "$OUT/logs/auto"
for round in 1 2; do
    for shape in 4096x4096x4096 8192x8192x8192 8192x4096x4096; do
        IFS=x read -r m n k <<< "$shape"
        build-gpu/kjit run configs/mlp_layer.json --set "shape=[$m,$k]" --set "inputs.W.shape=[$k,$n]" --skip-ceiling \
            --set 'stages=[{"op":"matmul","input":"x_in","by":"W"}]' --json "$OUT/logs/auto/$shape.mma_auto.$round.json" \
            >> "$OUT/logs/auto.log" 2>&1
    done
done
python3 - "$OUT/logs/auto" <<'PY'
import glob, json, statistics, sys
for shape in ("4096x4096x4096", "8192x8192x8192", "8192x4096x4096"):
    runs = [json.load(open(f))[0] for f in sorted(glob.glob(f"{sys.argv[1]}/{shape}.mma_auto.*.json"))]
    ms = statistics.median(r["kernel_cold_median_ms"] for r in runs)
    m, n, k = map(int, shape.split("x"))
    print(f"{shape} mma auto: {ms:.4f} ms, {2 * m * n * k / (ms * 1e-3) / 1e12:.1f} TFLOP/s, {runs[0]['registers']} registers, "
          f"{' '.join(r['status'] for r in runs)}, {'; '.join(r['warnings'] for r in runs if r['warnings'])}")
PY
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
OUT=$OUT/logs timeout 150 bash scripts/gpu-check.sh gemm-odd
grep -cE " PASS$" "$OUT/logs/gemm_odd.log"; grep -cE "FAIL" "$OUT/logs/gemm_odd.log"; grep -c "^== " "$OUT/logs/gemm_odd.log"
cd "$OUT/logs" && tar czf ../gemm-data.tgz gemm gemm_odd auto gemm.log gemm_odd.log auto.log gemm_tune.json gemm_tune.log 2>/dev/null
cd "$OUT" && cp logs/gemm_table.md logs/gemm_peers.jsonl . && gzip -c logs/tests.log > tests.log.gz && rm -rf logs
