#!/usr/bin/env bash
# Issue 40, the split's sixth call: the thin-product rule (M ≤ 256: 64-row tiles, the narrowest that
# fit one wave, split or in a deep ring) at thin shapes of real models, beside the launches it
# replaced and cuBLAS / cuBLASLt in the same call; gpu_tests' matmul cases at the new defaults.
set -uo pipefail
export OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > "$OUT/env.txt"
{ cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/.deps/usr" -DKJIT_PYTHON=OFF &&
  cmake --build build-gpu --target kjit gpu_tests -j "$(nproc)"; } > "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
kjit=$PWD/build-gpu/kjit
export KJIT_CACHE_DIR=/tmp/kjit-cache
timeout 240 build-gpu/tests/gpu_tests -tc="wgmma's split*,matmuls verify at odd shapes*" > "$OUT/logs/gpu_tests.log" 2>&1
echo "gpu_tests: exit $?"; tail -3 "$OUT/logs/gpu_tests.log"; grep -m5 -A12 "ERROR" "$OUT/logs/gpu_tests.log"
# One case, one launch: M K N tag launch-json
product() {
    local m=$1 k=$2 n=$3 tag=$4 launch=$5
    timeout 60 "$kjit" run configs/mlp_layer.json --set dtype=bfloat16 --set "shape=[$m,$k]" --set "inputs.W.shape=[$k,$n]" \
        --set 'stages=[{"op":"matmul","input":"x_in","by":"W"},{"op":"bias","by":"b"}]' --set "launch=$launch" \
        --set measure.repeat=20 --set measure.max_ms=200 --skip-ceiling --json "$OUT/logs/p_${m}x${n}x${k}_$tag.json" >> "$OUT/logs/products.log" 2>&1 ||
        echo "$m $n $k $tag: exit $?" >> "$OUT/logs/products.log"
}
for case in 256x4096x4096:auto:'{}' 256x4096x4096:w128x128s4k2:'{"rung":"wgmma","tile_m":128,"tile_n":128,"stages":4,"split_k":2}' \
            128x4096x4096:auto:'{}' 128x4096x4096:w64x128s8:'{"rung":"wgmma","tile_m":64,"tile_n":128,"stages":8,"schedule":"pingpong"}' \
            128x3072x768:auto:'{}' 128x3072x768:w64x128s4k2:'{"rung":"wgmma","tile_m":64,"tile_n":128,"stages":4,"schedule":"pingpong","split_k":2}' \
            256x3072x768:auto:'{}' 256x3072x768:w128x128s4:'{"rung":"wgmma","tile_m":128,"tile_n":128,"stages":4}' \
            16x11008x4096:auto:'{}' 16x11008x4096:w64x64s8:'{"rung":"wgmma","tile_m":64,"tile_n":64,"stages":8,"schedule":"pingpong"}' \
            32x14336x4096:auto:'{}' 32x14336x4096:w64x128s4:'{"rung":"wgmma","tile_m":64,"tile_n":128,"stages":4,"schedule":"pingpong"}' \
            256x11008x4096:auto:'{}' 256x11008x4096:w64x128s8:'{"rung":"wgmma","tile_m":64,"tile_n":128,"stages":8,"schedule":"pingpong"}' \
            128x768x3072:auto:'{}' 16x4096x4096:auto:'{}' 8x5120x5120:auto:'{}'; do
    IFS=: read -r mnk tag launch <<< "$case"
    IFS=x read -r m n k <<< "$mnk"
    product $m $k $n "$tag" "$launch"
done
grep -c "check    PASS" "$OUT/logs/products.log"; grep -c "check    FAIL\|exit" "$OUT/logs/products.log"
timeout 150 python3 bench/peers/gemm_peers.py --no-fp32 --tools cublas,cublaslt_bias \
    --shapes 256x4096x4096,128x4096x4096,128x3072x768,256x3072x768,16x11008x4096,32x14336x4096,256x11008x4096,128x768x3072,16x4096x4096,8x5120x5120 \
    > "$OUT/logs/gemm_peers.jsonl" 2> "$OUT/logs/gemm_peers.err"
python3 - "$OUT/logs" <<'PY' | tee "$OUT/table.txt"
import glob, json, os, sys
d = sys.argv[1]
for f in sorted(glob.glob(os.path.join(d, "p_*.json"))):
    r = json.load(open(f))[0]
    print(f"{os.path.basename(f)[2:-5]:28s} {r.get('kernel_cold_median_ms', float('nan')) * 1000:8.1f} us  {r.get('status')}  {r.get('variant', '')[60:170]}")
for line in open(os.path.join(d, "gemm_peers.jsonl")):
    p = json.loads(line)
    print(f"peer {p.get('tool'):16s} {p['m']}x{p['n']}x{p['k']} {p.get('median_ms', float('nan')) * 1000:8.1f} us")
PY
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
cd "$OUT/logs" && tar czf ../data.tgz . && cd "$OUT" && rm -rf logs
