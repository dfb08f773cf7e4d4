#!/usr/bin/env bash
# Issue 40, the split's fourth call: deeper rings (up to 12 buffers) for decode steps' 64 × 64
# tiles, split or not, and 64 × 64 where the rule takes 64 × 128 for other models' decode steps;
# beside cuBLAS / cuBLASLt in the same call.
set -uo pipefail
export OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > "$OUT/env.txt"
{ cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/.deps/usr" -DKJIT_PYTHON=OFF &&
  cmake --build build-gpu --target kjit gpu_tests -j "$(nproc)"; } > "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
kjit=$PWD/build-gpu/kjit
export KJIT_CACHE_DIR=/tmp/kjit-cache
# One case, one launch: M K N tag launch-json
product() {
    local m=$1 k=$2 n=$3 tag=$4 launch=$5
    timeout 60 "$kjit" run configs/mlp_layer.json --set dtype=bfloat16 --set "shape=[$m,$k]" --set "inputs.W.shape=[$k,$n]" \
        --set 'stages=[{"op":"matmul","input":"x_in","by":"W"},{"op":"bias","by":"b"}]' --set "launch=$launch" \
        --set measure.repeat=20 --set measure.max_ms=200 --skip-ceiling --json "$OUT/logs/p_${m}x${n}x${k}_$tag.json" >> "$OUT/logs/products.log" 2>&1 ||
        echo "$m $n $k $tag: exit $?" >> "$OUT/logs/products.log"
}
pp='"rung":"wgmma","tile_m":64,"tile_n":64,"schedule":"pingpong"'
for m in 1 16 64; do
    product $m 4096 4096 auto '{}'
    for s in 9 10; do product $m 4096 4096 w64x64s${s}k2 "{$pp,\"stages\":$s,\"split_k\":2}"; done
    product $m 4096 4096 w64x64s12 "{$pp,\"stages\":12}"
done
for mnk in 8x5120x5120 32x14336x4096 16x11008x4096 8x13824x5120; do
    IFS=x read -r m n k <<< "$mnk"
    product $m $k $n auto '{}'
    product $m $k $n w64x64s8 "{$pp,\"stages\":8}"
    product $m $k $n w64x64s12 "{$pp,\"stages\":12}"
done
for mnk in 16x3072x768 128x3072x768; do
    IFS=x read -r m n k <<< "$mnk"
    product $m $k $n auto '{}'
    product $m $k $n w64x64s6k2 "{$pp,\"stages\":6,\"split_k\":2}"
done
grep -c "check    PASS" "$OUT/logs/products.log"; grep -c "check    FAIL\|exit" "$OUT/logs/products.log"
timeout 150 python3 bench/peers/gemm_peers.py --no-fp32 --tools cublas,cublaslt_bias \
    --shapes 1x4096x4096,16x4096x4096,64x4096x4096,8x5120x5120,32x14336x4096,16x11008x4096,8x13824x5120,16x3072x768,128x3072x768 \
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
