#!/usr/bin/env bash
# Issue 40, the second call: after A's tile copies only the rows a decode step has and the tensor
# maps are prefetched, with the rule's splits in two. Correctness (gpu_tests' split case and the
# odd-shape matmul case), then decode steps, a 256-token product, GPT-2's down-projection and
# other models' decode steps at the defaults, beside cuBLAS / cuBLASLt in the same call.
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
pp='"rung":"wgmma","tile_m":64,"schedule":"pingpong"'
for m in 1 16 64; do
    product $m 4096 4096 auto '{}'
    product $m 4096 4096 w64x64s8 "{$pp,\"tile_n\":64,\"stages\":8}"
    product $m 4096 4096 w64x128s4k2 "{$pp,\"tile_n\":128,\"stages\":4,\"split_k\":2}"
    product $m 4096 4096 w64x64s6k2 "{$pp,\"tile_n\":64,\"stages\":6,\"split_k\":2}"
done
product 256 4096 4096 auto '{}'
product 256 4096 4096 w128x128s4 '{"rung":"wgmma","tile_m":128,"tile_n":128,"stages":4}'
product 256 4096 4096 w64x64s8k2 "{$pp,\"tile_n\":64,\"stages\":8,\"split_k\":2}"
product 4096 3072 768 auto '{}'
for mnk in 16x11008x4096 16x4096x11008 16x3072x768 16x768x3072 128x3072x768 128x768x3072 32x14336x4096 8x5120x5120 8x13824x5120; do
    IFS=x read -r m n k <<< "$mnk"
    product $m $k $n auto '{}'
done
grep -c "check    PASS" "$OUT/logs/products.log"; grep -c "check    FAIL\|exit" "$OUT/logs/products.log"
timeout 150 python3 bench/peers/gemm_peers.py --no-fp32 --tools cublas,cublaslt_bias \
    --shapes 1x4096x4096,16x4096x4096,64x4096x4096,256x4096x4096,4096x768x3072,16x11008x4096,16x4096x11008,16x3072x768,16x768x3072,128x3072x768,128x768x3072,32x14336x4096,8x5120x5120,8x13824x5120 \
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
