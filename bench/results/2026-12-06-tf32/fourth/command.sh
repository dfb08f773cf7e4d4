#!/usr/bin/env bash
# Decode steps at the defaults since "auto" streams B for at most 4 rows: the gpu test of the
# stream rung and TF32, then decode steps + bias at the defaults beside cuBLASLt's addmm in the
# same call (two rounds), and TF32 at the defaults beside cuBLAS's float32 products.
set -uo pipefail
source bench/attention_call.sh
cmake --build build-gpu --target gpu_tests -j "$(nproc)" >> "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
timeout 240 build-gpu/tests/gpu_tests -tc="decode steps verify*" > "$OUT/logs/gpu_tests.log" 2>&1
{ echo "gpu_tests: exit $?"; tail -3 "$OUT/logs/gpu_tests.log"; grep -m5 -B8 -A12 "ERROR" "$OUT/logs/gpu_tests.log"; } | tee "$OUT/gpu_tests.txt"
gemm() {
  local name=$1 m=$2 n=$3 k=$4 dtype=$5; shift 5
  timeout 60 "$kjit" run configs/mlp_layer.json --skip-ceiling --set dtype=$dtype --set "shape=[$m,$k]" \
    --set "inputs.W.shape=[$k,$n]" --set 'stages=[{"op":"matmul","input":"x_in","by":"W"},{"op":"bias","by":"b"}]' \
    "$@" --json "$OUT/logs/$name.json" > "$OUT/logs/$name.txt" 2>&1
  local rc=$?
  echo "$name: exit $rc $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); r=r[0] if isinstance(r,list) else r; print(r.get("status"), "mismatches", r.get("mismatches"), "cold_us", round(1000 * (r.get("kernel_cold_median_ms") or 0), 2), "regs", r.get("registers"), r.get("variant"), r.get("error") or "")' "$OUT/logs/$name.json" 2>/dev/null || tail -3 "$OUT/logs/$name.txt")"
}
pack
shapes=1x4096x4096,2x4096x4096,3x4096x4096,4x4096x4096,8x4096x4096,16x4096x4096,1x11008x4096,1x4096x11008,1x3072x768,1x768x3072,4x768x3072,1x14336x4096,1x5120x5120
{
for round in 1 2; do
  for mnk in ${shapes//,/ }; do
    IFS=x read -r m n k <<< "$mnk"
    gemm "r${round}_${mnk}_default" "$m" "$n" "$k" bfloat16
    [ "$m" -le 4 ] && gemm "r${round}_${mnk}_wgmma" "$m" "$n" "$k" bfloat16 --set 'launch={"rung":"wgmma"}'
  done
  python3 bench/peers/gemm_peers.py --shapes $shapes --tools cublaslt_bias --no-fp32 --repeat 30 2> "$OUT/logs/peers_r$round.err" | tee -a "$OUT/logs/peers.jsonl"
  pack
done
for mnk in 4096x4096x4096 8192x4096x4096 4096x11008x4096; do
  IFS=x read -r m n k <<< "$mnk"
  gemm "tf32_$mnk" "$m" "$n" "$k" float32 --set 'compile.fp32_precision="tf32"' --set 'stages=[{"op":"matmul","input":"x_in","by":"W"}]'
done
python3 bench/peers/gemm_peers.py --shapes 4096x4096x4096,8192x4096x4096,4096x11008x4096 --tools cublas_fp32,cublas_tf32 --repeat 20 2>> "$OUT/logs/peers_r2.err" | tee -a "$OUT/logs/peers.jsonl"
} 2>&1 | tee "$OUT/decode.txt"
pack
