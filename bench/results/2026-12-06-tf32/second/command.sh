#!/usr/bin/env bash
# The stream rung (CUDA cores streaming W, for decode steps of at most 8 rows): the gpu test of
# it and of TF32 at odd shapes, then decode steps + bias at the defaults (wgmma's split) beside
# stream launches and cuBLASLt's addmm in the same call, two rounds; TF32 again beside cuBLAS.
set -uo pipefail
source bench/attention_call.sh
cmake --build build-gpu --target gpu_tests -j "$(nproc)" >> "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
timeout 240 build-gpu/tests/gpu_tests -tc="decode steps verify*" > "$OUT/logs/gpu_tests.log" 2>&1
{ echo "gpu_tests: exit $?"; tail -3 "$OUT/logs/gpu_tests.log"; grep -m5 -B8 -A12 "ERROR" "$OUT/logs/gpu_tests.log"; } | tee "$OUT/gpu_tests.txt"
# gemm NAME M N K DTYPE [kjit run options]: M x K times K x N + bias; status, mismatches, cold median.
gemm() {
  local name=$1 m=$2 n=$3 k=$4 dtype=$5; shift 5
  timeout 60 "$kjit" run configs/mlp_layer.json --skip-ceiling --set dtype=$dtype --set "shape=[$m,$k]" \
    --set "inputs.W.shape=[$k,$n]" --set 'stages=[{"op":"matmul","input":"x_in","by":"W"},{"op":"bias","by":"b"}]' \
    "$@" --json "$OUT/logs/$name.json" > "$OUT/logs/$name.txt" 2>&1
  local rc=$?
  echo "$name: exit $rc $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); r=r[0] if isinstance(r,list) else r; print(r.get("status"), "mismatches", r.get("mismatches"), "cold_us", round(1000 * (r.get("kernel_cold_median_ms") or 0), 2), "regs", r.get("registers"), r.get("variant"), r.get("error") or "")' "$OUT/logs/$name.json" 2>/dev/null || tail -3 "$OUT/logs/$name.txt")"
}
pack
{
for round in 1 2; do
  for mnk in 1x4096x4096 2x4096x4096 4x4096x4096 8x4096x4096 1x11008x4096 1x4096x11008 1x3072x768 1x768x3072 8x768x3072; do
    IFS=x read -r m n k <<< "$mnk"
    gemm "r${round}_${mnk}_default" "$m" "$n" "$k" bfloat16
    gemm "r${round}_${mnk}_stream" "$m" "$n" "$k" bfloat16 --set 'launch={"rung":"stream"}'
    for tw in 32x16 16x16 8x16 16x8 8x8 32x32; do
      IFS=x read -r t w <<< "$tw"
      gemm "r${round}_${mnk}_stream_${tw}" "$m" "$n" "$k" bfloat16 --set "launch={\"rung\":\"stream\",\"tile_n\":$t,\"warps_n\":$w}"
    done
  done
  python3 bench/peers/gemm_peers.py --shapes 1x4096x4096,2x4096x4096,4x4096x4096,8x4096x4096,1x11008x4096,1x4096x11008,1x3072x768,1x768x3072,8x768x3072 \
    --tools cublaslt_bias,cublas --no-fp32 --repeat 30 2> "$OUT/logs/peers_r$round.err" | tee -a "$OUT/logs/peers.jsonl"
  pack
done
gemm tf32_4096 4096 4096 4096 float32 --set 'compile.fp32_precision="tf32"'
gemm tf32_8192x4096 8192 4096 4096 float32 --set 'compile.fp32_precision="tf32"'
python3 bench/peers/gemm_peers.py --shapes 4096x4096x4096,8192x4096x4096 --tools cublas_fp32,cublas_tf32 --repeat 20 2>> "$OUT/logs/peers_r2.err" | tee -a "$OUT/logs/peers.jsonl"
} 2>&1 | tee "$OUT/decode.txt"
pack
