#!/usr/bin/env bash
# Issue 40, the split's seventh call: the launches near the wave model's choice where it is short
# of cuBLAS (GPT-2's down-projection, 4096 × 768 × 3072; LLaMA's up-projection at 256 tokens,
# 256 × 11008 × 4096): tile orders, clusters, other tiles; beside cuBLAS / cuBLASLt. First, every
# shipped config, after the row family's policy became typed.
set -uo pipefail
export OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > "$OUT/env.txt"
{ cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/.deps/usr" -DKJIT_PYTHON=OFF &&
  cmake --build build-gpu --target kjit -j "$(nproc)"; } > "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
kjit=$PWD/build-gpu/kjit
export KJIT_CACHE_DIR=/tmp/kjit-cache
# Every shipped config that runs (sweeps and tunes aside), after the row family's policy became typed.
for cfg in configs/*.json; do
    case "$cfg" in *sweep_*|*tune_*) continue ;; esac
    timeout 60 "$kjit" run "$cfg" --set measure.repeat=5 --set measure.max_ms=20 --skip-ceiling > "$OUT/logs/$(basename "$cfg" .json).log" 2>&1
    echo "$(basename "$cfg"): exit $? $(grep -o 'check    [A-Z]*' "$OUT/logs/$(basename "$cfg" .json).log" | tr '\n' ' ')"
done
# One case, one launch: M K N tag launch-json
product() {
    local m=$1 k=$2 n=$3 tag=$4 launch=$5
    timeout 60 "$kjit" run configs/mlp_layer.json --set dtype=bfloat16 --set "shape=[$m,$k]" --set "inputs.W.shape=[$k,$n]" \
        --set 'stages=[{"op":"matmul","input":"x_in","by":"W"},{"op":"bias","by":"b"}]' --set "launch=$launch" \
        --set measure.repeat=20 --set measure.max_ms=200 --skip-ceiling --json "$OUT/logs/p_${m}x${n}x${k}_$tag.json" >> "$OUT/logs/products.log" 2>&1 ||
        echo "$m $n $k $tag: exit $?" >> "$OUT/logs/products.log"
}
w='"rung":"wgmma"'
for case in 4096x768x3072:auto:'{}' 4096x768x3072:g8:"{$w,\"tile_n\":192,\"stages\":4,\"group_m\":8}" \
            4096x768x3072:g4:"{$w,\"tile_n\":192,\"stages\":4,\"group_m\":4}" \
            4096x768x3072:g32:"{$w,\"tile_n\":192,\"stages\":4,\"group_m\":32}" \
            4096x768x3072:c2:"{$w,\"tile_n\":192,\"stages\":4,\"cluster_m\":2}" \
            4096x768x3072:c2s3:"{$w,\"tile_n\":192,\"stages\":3,\"cluster_m\":2}" \
            256x11008x4096:auto:'{}' 256x11008x4096:w128x256s3:"{$w,\"tile_n\":256,\"stages\":3}" \
            256x11008x4096:w128x128s4:"{$w,\"tile_n\":128,\"stages\":4}" \
            256x11008x4096:w256x128s3:"{$w,\"tile_m\":256,\"tile_n\":128,\"stages\":3}" \
            256x11008x4096:w64x256s4p:"{$w,\"tile_m\":64,\"tile_n\":256,\"stages\":4,\"schedule\":\"pingpong\"}" \
            256x11008x4096:c2:"{$w,\"tile_n\":192,\"stages\":4,\"cluster_m\":2}"; do
    IFS=: read -r mnk tag launch <<< "$case"
    IFS=x read -r m n k <<< "$mnk"
    product $m $k $n "$tag" "$launch"
done
grep -c "check    PASS" "$OUT/logs/products.log"; grep -c "check    FAIL\|exit" "$OUT/logs/products.log"
timeout 150 python3 bench/peers/gemm_peers.py --no-fp32 --tools cublas,cublaslt_bias \
    --shapes 4096x768x3072,256x11008x4096 \
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
