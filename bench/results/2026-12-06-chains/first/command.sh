#!/usr/bin/env bash
# Issue 40: thin products (decode steps, a few hundred tokens) in chains of accumulators, each
# 16-deep step of a buffer on its own chain, beside one chain (the launch before) and cuBLAS /
# cuBLASLt in the same call; gpu_tests' wgmma split and chain cases first. Two rounds, alternated.
# Then attention's score modifiers with a division by a constant as a product by its reciprocal
# (soft-capping's x / 30), beside the unmodified kernel.
set -uo pipefail
export OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > "$OUT/env.txt"
{ cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/.deps/usr" -DKJIT_PYTHON=OFF &&
  cmake --build build-gpu --target kjit gpu_tests -j "$(nproc)"; } > "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
kjit=$PWD/build-gpu/kjit
export KJIT_CACHE_DIR=/tmp/kjit-cache
pack() { (cd "$OUT/logs" && tar czf ../data.tgz .); }
timeout 150 build-gpu/tests/gpu_tests -tc="wgmma's split*" > "$OUT/logs/gpu_tests.log" 2>&1
echo "gpu_tests: exit $?"; tail -3 "$OUT/logs/gpu_tests.log"; grep -m5 -A12 "ERROR" "$OUT/logs/gpu_tests.log"
# One product + bias at the defaults but for `extra` (--set lines): M N K tag [extra]
product() {
    local m=$1 n=$2 k=$3 tag=$4; shift 4
    timeout 40 "$kjit" run configs/mlp_layer.json --set dtype=bfloat16 --set "shape=[$m,$k]" --set "inputs.W.shape=[$k,$n]" \
        --set 'stages=[{"op":"matmul","input":"x_in","by":"W"},{"op":"bias","by":"b"}]' "$@" \
        --set measure.repeat=20 --set measure.max_ms=200 --skip-ceiling --json "$OUT/logs/p_${m}x${n}x${k}_$tag.json" >> "$OUT/logs/products.log" 2>&1 ||
        echo "$m $n $k $tag: exit $?" >> "$OUT/logs/products.log"
}
shapes="1x4096x4096 16x4096x4096 64x4096x4096 16x11008x4096 8x5120x5120 32x14336x4096 16x3072x768 128x3072x768 128x4096x4096 256x4096x4096"
for round in 1 2; do
  for mnk in $shapes; do
    IFS=x read -r m n k <<< "$mnk"
    product $m $n $k "r${round}_auto"
    product $m $n $k "r${round}_chains1" --set launch.chains=1
    [ "$m" -le 64 ] && [ "$n" -le 5120 ] && product $m $n $k "r${round}_chains2" --set launch.chains=2
  done
  pack
done
grep -c "check    PASS" "$OUT/logs/products.log"; grep "check    FAIL\|exit" "$OUT/logs/products.log" | head
timeout 120 python3 bench/peers/gemm_peers.py --no-fp32 --tools cublas,cublaslt_bias --shapes "${shapes// /,}" \
    > "$OUT/logs/gemm_peers.jsonl" 2> "$OUT/logs/gemm_peers.err"
python3 - "$OUT/logs" <<'PY' | tee "$OUT/table.txt"
import glob, json, os, sys
d = sys.argv[1]
for f in sorted(glob.glob(os.path.join(d, "p_*.json"))):
    r = json.load(open(f))[0]
    v = r.get("variant", "")
    print(f"{os.path.basename(f)[2:-5]:30s} {r.get('kernel_cold_median_ms', float('nan')) * 1000:8.1f} us  {r.get('status')}  regs {r.get('registers')}  {v[v.find('rung='):]}")
for line in open(os.path.join(d, "gemm_peers.jsonl")):
    p = json.loads(line)
    print(f"peer {p.get('tool'):16s} {p['m']}x{p['n']}x{p['k']} {p.get('median_ms', float('nan')) * 1000:8.1f} us")
PY
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
pack
cp "$OUT/env.txt" "$OUT/logs/env_gemm.txt"
source bench/attention_call.sh  # (kjit is built: point NAME SEQ DIM BATCH HEADS KV SCORE)
for round in 1 2; do
  point "r${round}_plain" 8192 128 2 16 16 "x"
  point "r${round}_softcap" 8192 128 2 16 16 "30 * tanh(x / 30)"
  point "r${round}_alibi" 8192 128 2 16 16 "x + exp2(-8.0 * (head + 1) / 16) * (col - row)"
done | tee "$OUT/attention.txt"
pack
