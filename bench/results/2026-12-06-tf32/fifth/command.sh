#!/usr/bin/env bash
# The stream rung's tile and split at decode shapes beyond those its rule came from (N from 2048
# to 8192, K 4096 to 8192): the rule's launch, others around it and wgmma's, beside cuBLASLt's
# addmm in the same call, two rounds; then the gpu test of the stream rung and TF32.
set -uo pipefail
source bench/attention_call.sh
cmake --build build-gpu --target gpu_tests -j "$(nproc)" >> "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
gemm() {
  local name=$1 m=$2 n=$3 k=$4 dtype=$5; shift 5
  timeout 60 "$kjit" run configs/mlp_layer.json --skip-ceiling --set dtype=$dtype --set "shape=[$m,$k]" \
    --set "inputs.W.shape=[$k,$n]" --set 'stages=[{"op":"matmul","input":"x_in","by":"W"},{"op":"bias","by":"b"}]' \
    "$@" --json "$OUT/logs/$name.json" > "$OUT/logs/$name.txt" 2>&1
  local rc=$?
  echo "$name: exit $rc $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); r=r[0] if isinstance(r,list) else r; print(r.get("status"), "mismatches", r.get("mismatches"), "cold_us", round(1000 * (r.get("kernel_cold_median_ms") or 0), 2), "regs", r.get("registers"), r.get("variant"), r.get("error") or "")' "$OUT/logs/$name.json" 2>/dev/null || tail -3 "$OUT/logs/$name.txt")"
}
shapes=1x5120x5120,1x2048x4096,1x8192x8192,1x6144x4096,2x5120x5120,1x4096x8192
{
for round in 1 2; do
  for mnk in ${shapes//,/ }; do
    IFS=x read -r m n k <<< "$mnk"
    gemm "r${round}_${mnk}_default" "$m" "$n" "$k" bfloat16
    gemm "r${round}_${mnk}_wgmma" "$m" "$n" "$k" bfloat16 --set 'launch={"rung":"wgmma"}'
    for v in 64_1 64_2 64_4 32_1 32_2 32_4; do
      IFS=_ read -r t sp <<< "$v"
      gemm "r${round}_${mnk}_stream_$v" "$m" "$n" "$k" bfloat16 --set "launch={\"rung\":\"stream\",\"tile_n\":$t,\"split_k\":$sp}"
    done
  done
  python3 bench/peers/gemm_peers.py --shapes $shapes --tools cublaslt_bias --no-fp32 --repeat 30 2> "$OUT/logs/peers_r$round.err" | tee -a "$OUT/logs/peers.jsonl"
  pack
done
} 2>&1 | tee "$OUT/decode.txt"
timeout 200 build-gpu/tests/gpu_tests -tc="decode steps verify*" > "$OUT/logs/gpu_tests.log" 2>&1
{ echo "gpu_tests: exit $?"; tail -3 "$OUT/logs/gpu_tests.log"; grep -m5 -B8 -A12 "ERROR" "$OUT/logs/gpu_tests.log"; } | tee "$OUT/gpu_tests.txt"
pack
