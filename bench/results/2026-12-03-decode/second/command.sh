#!/usr/bin/env bash
# After the GEMM templates took their shared memory as a struct (kjit_layout) with the plan's
# numbers asserted, and the GEMM and transpose policies became typed: every GEMM rung and copy
# path verified on the H200 again, the transpose and the shipped configs run, and the LLaMA-2-7B
# up-projection and a decode step timed beside cuBLAS in the same call.
set -uo pipefail
export OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > "$OUT/env.txt"
{ cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/.deps/usr" -DKJIT_PYTHON=OFF &&
  cmake --build build-gpu --target kjit -j "$(nproc)"; } > "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
kjit=$PWD/build-gpu/kjit
export KJIT_CACHE_DIR=/tmp/kjit-cache
for cfg in configs/*.json; do
    case "$cfg" in *sweep_*|*tune_*) continue ;; esac
    timeout 60 "$kjit" run "$cfg" --set measure.repeat=5 --set measure.max_ms=20 --skip-ceiling > "$OUT/logs/$(basename "$cfg" .json).log" 2>&1
    echo "$(basename "$cfg"): exit $? $(grep -o 'check    [A-Z]*' "$OUT/logs/$(basename "$cfg" .json).log")"
done
gemm() {  # tag, then --set lines (after a 2048 × 4096 × 2048 product's: the reference's time is the CPU's)
    local tag=$1; shift
    timeout 60 "$kjit" run configs/mlp_layer.json --skip-ceiling --set 'shape=[2048,4096]' --set 'inputs.W.shape=[4096,2048]' \
        "$@" --json "$OUT/logs/g_$tag.json" > "$OUT/logs/g_$tag.log" 2>&1
    echo "$tag: exit $? $(grep -o 'check    [A-Z]*' "$OUT/logs/g_$tag.log") $(grep -o 'rung=[a-z]* tile_m=[0-9]* tile_n=[0-9]*' "$OUT/logs/g_$tag.log" | head -1)"
}
for dtype in bfloat16 float16; do
    gemm wgmma_$dtype --set dtype=$dtype
    gemm wgmma_odd_$dtype --set dtype=$dtype --set 'shape=[1000,1001]' --set 'inputs.W.shape=[1001,999]'
    gemm wgmma_cluster_$dtype --set dtype=$dtype --set launch.cluster_m=2
    gemm wgmma_pingpong_$dtype --set dtype=$dtype --set launch.tile_m=64 --set launch.schedule=pingpong
    gemm mma_$dtype --set dtype=$dtype --set launch.rung=mma
    gemm mma_odd_$dtype --set dtype=$dtype --set launch.rung=mma --set 'shape=[1000,1001]' --set 'inputs.W.shape=[1001,999]'
done
gemm simt_float32 --set dtype=float32 --set launch.rung=simt
gemm decode_m16 --set dtype=bfloat16 --set 'shape=[16,4096]' --set 'inputs.W.shape=[4096,4096]' \
    --set 'stages=[{"op":"matmul","input":"x_in","by":"W"},{"op":"bias","by":"b"}]' --set measure.repeat=20
gemm llama_up_silu --set dtype=bfloat16 --set 'shape=[4096,4096]' --set 'inputs.W.shape=[4096,11008]' \
    --set 'stages=[{"op":"matmul","input":"x_in","by":"W"},{"op":"silu"}]' --set measure.repeat=20
timeout 90 python3 bench/peers/gemm_peers.py --shapes 4096x11008x4096,16x4096x4096 --no-fp32 --tools cublas,eager_silu,cublaslt_bias \
    > "$OUT/logs/gemm_peers.jsonl" 2> "$OUT/logs/gemm_peers.err"
python3 - "$OUT/logs" <<'PY' | tee "$OUT/table.txt"
import glob, json, os, sys
d = sys.argv[1]
for f in sorted(glob.glob(os.path.join(d, "g_*.json"))):
    r = json.load(open(f))[0]
    print(f"{os.path.basename(f)[2:-5]:28s} {r.get('kernel_cold_median_ms', float('nan')) * 1000:9.1f} us  {r.get('status')}")
for line in open(os.path.join(d, "gemm_peers.jsonl")):
    p = json.loads(line)
    print(f"peer {p['tool']:16s} {p['m']}x{p['n']}x{p['k']} {p.get('median_ms', float('nan')) * 1000:9.1f} us")
PY
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
cd "$OUT/logs" && tar czf ../data.tgz . && cd "$OUT" && rm -rf logs
