#!/usr/bin/env bash
# Issue 40's decode and small-N products: which launches stream W fastest at M = 1, 16, 64
# (N = K = 4096) and GPT-2's down-projection (4096 × 768 × 3072), beside cuBLAS in the same call;
# then the expression language's // and % on the GPU (configs/causal_softmax_heads.json and a map
# of positions with negative operands).
set -uo pipefail
export OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > "$OUT/env.txt"
{ cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/.deps/usr" -DKJIT_PYTHON=OFF &&
  cmake --build build-gpu --target kjit -j "$(nproc)"; } > "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
kjit=$PWD/build-gpu/kjit
export KJIT_CACHE_DIR=/tmp/kjit-cache
for cfg in causal_softmax_heads causal_softmax; do
    "$kjit" run "configs/$cfg.json" --json "$OUT/logs/$cfg.json" > "$OUT/logs/$cfg.log" 2>&1; echo "$cfg: exit $?"
done
"$kjit" run --set 'stages=[{"op":"map","input":"greyscales","expr":"x * (i % 2 == 0 ? 1 : -1) + (i - 500000) // 7 % -5"}]' \
    > "$OUT/logs/positions.log" 2>&1; echo "positions: exit $?"
grep -h "check\|kernel  \|cold" "$OUT/logs/"*.log | head -20
# One case, one launch: M K N epilogue launch-json
product() {
    local m=$1 k=$2 n=$3 tag=$4 launch=$5
    timeout 60 "$kjit" run configs/mlp_layer.json --set dtype=bfloat16 --set "shape=[$m,$k]" --set "inputs.W.shape=[$k,$n]" \
        --set 'stages=[{"op":"matmul","input":"x_in","by":"W"},{"op":"bias","by":"b"}]' --set "launch=$launch" \
        --set measure.repeat=20 --set measure.max_ms=200 --skip-ceiling --json "$OUT/logs/p_${m}x${n}x${k}_$tag.json" >> "$OUT/logs/products.log" 2>&1 ||
        echo "$m $n $k $tag: exit $?" >> "$OUT/logs/products.log"
}
for m in 1 16 64; do
    product $m 4096 4096 auto '{}'
    product $m 4096 4096 w64x64s4 '{"rung":"wgmma","tile_m":64,"tile_n":64,"schedule":"pingpong","stages":4}'
    product $m 4096 4096 w64x64s8 '{"rung":"wgmma","tile_m":64,"tile_n":64,"schedule":"pingpong","stages":8}'
    product $m 4096 4096 m32x32k64s8 '{"rung":"mma","tile_m":32,"tile_n":32,"tile_k":64,"stages":8,"warps_m":2,"warps_n":2}'
    product $m 4096 4096 m32x64k64s6 '{"rung":"mma","tile_m":32,"tile_n":64,"tile_k":64,"stages":6,"warps_m":2,"warps_n":2}'
    product $m 4096 4096 m32x32k64s8w21 '{"rung":"mma","tile_m":32,"tile_n":32,"tile_k":64,"stages":8,"warps_m":2,"warps_n":1}'
done
for launch in auto:'{}' w128x128c:'{"rung":"wgmma","tile_m":128,"tile_n":128,"stages":4}' \
              w64x128p:'{"rung":"wgmma","tile_m":64,"tile_n":128,"schedule":"pingpong","stages":6}' \
              w128x64c:'{"rung":"wgmma","tile_m":128,"tile_n":64,"stages":6}' \
              w64x64p:'{"rung":"wgmma","tile_m":64,"tile_n":64,"schedule":"pingpong","stages":8}' \
              m64x64k64s6:'{"rung":"mma","tile_m":64,"tile_n":64,"tile_k":64,"stages":6,"warps_m":2,"warps_n":2}'; do
    product 4096 3072 768 "${launch%%:*}" "${launch#*:}"
done
grep -c "check    PASS" "$OUT/logs/products.log"
timeout 120 python3 bench/peers/gemm_peers.py --shapes 1x4096x4096,16x4096x4096,64x4096x4096,4096x768x3072 --no-fp32 \
    --tools cublas,cublaslt_bias,eager_silu \
    > "$OUT/logs/gemm_peers.jsonl" 2> "$OUT/logs/gemm_peers.err"
python3 - "$OUT/logs" <<'PY' | tee "$OUT/decode_table.txt"
import glob, json, os, sys
d = sys.argv[1]
for f in sorted(glob.glob(os.path.join(d, "p_*.json"))):
    r = json.load(open(f))[0]
    print(f"{os.path.basename(f)[2:-5]:32s} {r.get('kernel_cold_median_ms', float('nan')) * 1000:8.1f} us  {r.get('status')}  {r.get('variant', '')[:60]}")
for line in open(os.path.join(d, "gemm_peers.jsonl")):
    p = json.loads(line)
    if p.get("dtype") == "bfloat16":
        print(f"peer {p.get('tool'):16s} {p['m']}x{p['n']}x{p['k']} {p.get('median_ms', float('nan')) * 1000:8.1f} us")
PY
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
cd "$OUT/logs" && tar czf ../decode-data.tgz . && cd "$OUT" && rm -rf logs
