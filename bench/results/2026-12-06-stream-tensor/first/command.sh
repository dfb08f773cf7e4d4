#!/usr/bin/env bash
# The stream rung on tensor cores (mma.sync, W's columns on its rows, A's rows on its columns) for
# decode steps of up to 64 rows: its gpu tests, then at each decode shape a tune of its launches
# (columns, warps, split, steps in flight; at 1 to 8 rows CUDA cores beside), the defaults, the
# wgmma rung's thin-product rule and cuBLASLt's addmm in the same call.
set -uo pipefail
source bench/gemm_call.sh
cmake --build build-gpu --target gpu_tests -j "$(nproc)" >> "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
timeout 200 build-gpu/tests/gpu_tests -tc="decode steps*" > "$OUT/logs/gpu_tests.log" 2>&1
{ echo "gpu_tests: exit $?"; tail -3 "$OUT/logs/gpu_tests.log"; grep -m5 -B8 -A12 "ERROR" "$OUT/logs/gpu_tests.log"; } | tee "$OUT/gpu_tests.txt"
pack
product='stages=[{"op":"matmul","input":"x_in","by":"W"},{"op":"bias","by":"b"}]'
tune_shape() {  # M N K: the stream rung's launches, exhaustively; prints the five fastest
  local m=$1 n=$2 k=$3 cores='"tensor"'
  [ "$m" -le 8 ] && cores='"cuda","tensor"'
  timeout 120 "$kjit" tune configs/mlp_layer.json --strategy exhaustive --quiet --set dtype=bfloat16 --set "shape=[$m,$k]" \
    --set "inputs.W.shape=[$k,$n]" --set "$product" --set 'launch={"rung":"stream"}' \
    --set "tune={\"axes\":{\"launch.cores\":[$cores],\"launch.tile_n\":[32,64],\"launch.warps_n\":[4,8,16],\"launch.split_k\":[1,2,4],\"launch.buffers\":[1,2]}}" \
    --json "$OUT/logs/tune_${m}x${n}x${k}.json" > "$OUT/logs/tune_${m}x${n}x${k}.txt" 2>&1
  echo "tune ${m}x${n}x${k}: exit $?"
  python3 - "$OUT/logs/tune_${m}x${n}x${k}.json" <<'PY'
import json, sys
rows = [r for r in json.load(open(sys.argv[1])) if r.get("status") == "PASS" and r.get("kernel_cold_median_ms")]
rows.sort(key=lambda r: r["kernel_cold_median_ms"])
for r in rows[:5]:
    print("  %.2f us" % (1000 * r["kernel_cold_median_ms"]), *(f"{k[7:]}={r[k]}" for k in ("policy_cores", "policy_tile_n", "policy_warps_n", "policy_split_k", "policy_buffers")), "regs", r.get("registers"))
print("  points passed:", len(rows))
PY
}
shapes=1x4096x4096,4x4096x4096,8x4096x4096,16x4096x4096,32x4096x4096,64x4096x4096,16x11008x4096,16x4096x11008,64x11008x4096,16x3072x768,64x3072x768,64x768x3072,32x14336x4096,8x5120x5120
{
for mnk in ${shapes//,/ }; do IFS=x read -r m n k <<< "$mnk"; tune_shape "$m" "$n" "$k"; done
pack
for round in 1 2; do
  for mnk in ${shapes//,/ }; do
    IFS=x read -r m n k <<< "$mnk"
    gemm "r${round}_${mnk}_default" "$m" "$n" "$k" bfloat16
    gemm "r${round}_${mnk}_wgmma" "$m" "$n" "$k" bfloat16 --set 'launch={"rung":"wgmma"}'
  done
  python3 bench/peers/gemm_peers.py --shapes $shapes --tools cublaslt_bias --no-fp32 --repeat 30 2> "$OUT/logs/peers_r$round.err" | tee -a "$OUT/logs/peers.jsonl"
  pack
done
} 2>&1 | tee "$OUT/decode.txt"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
pack
