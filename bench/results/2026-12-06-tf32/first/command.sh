#!/usr/bin/env bash
# float32 products as TF32 on the mma rung (compile.fp32_precision "tf32"): verified at large,
# odd and unaligned shapes; timed at the defaults and at launches around them beside cuBLAS's
# float32 and TF32 products in the same call. Then the division by a constant as a product by
# its reciprocal, verified beyond soft-capping (the gpu tests of every shipped config and every
# activation, maps and a softmax dividing by constants in each dtype).
set -uo pipefail
source bench/attention_call.sh
cmake --build build-gpu --target gpu_tests -j "$(nproc)" >> "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
# gemm NAME M N K [kjit run options]: configs/mlp_layer.json's product in float32 (+ bias + tanh
# unless the options set the stages), one line of status, mismatches, cold median and TFLOP/s.
gemm() {
  local name=$1 m=$2 n=$3 k=$4; shift 4
  timeout 60 "$kjit" run configs/mlp_layer.json --skip-ceiling --set dtype=float32 --set "shape=[$m,$k]" \
    --set "inputs.W.shape=[$k,$n]" "$@" --json "$OUT/logs/$name.json" > "$OUT/logs/$name.txt" 2>&1
  local rc=$?
  echo "$name: exit $rc $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); r=r[0] if isinstance(r,list) else r; print(r.get("status"), "mismatches", r.get("mismatches"), "of", r.get("compared"), "cold_ms", r.get("kernel_cold_median_ms"), "tflops", round(r.get("tflops") or 0), "regs", r.get("registers"), r.get("policy_operands"), r.get("error") or "")' "$OUT/logs/$name.json" 2>/dev/null || tail -3 "$OUT/logs/$name.txt")"
}
tf32=(--set 'compile.fp32_precision="tf32"')
alone=(--set 'stages=[{"op":"matmul","input":"x_in","by":"W"}]')
{
  gemm odd_elementwise 1000 1001 17 "${tf32[@]}"
  gemm odd_cp_async 1000 1000 36 "${tf32[@]}"
  gemm separate 777 1000 516 "${tf32[@]}" --set fusion=separate
  gemm ieee_mma_refused 64 64 64 --set launch.rung=mma
  for round in 1 2; do
    for mnk in 4096x4096x4096 8192x4096x4096 4096x11008x4096; do
      IFS=x read -r m n k <<< "$mnk"
      gemm "r${round}_${mnk}_simt" "$m" "$n" "$k" "${alone[@]}"
      gemm "r${round}_${mnk}_tf32" "$m" "$n" "$k" "${alone[@]}" "${tf32[@]}"
      gemm "r${round}_${mnk}_tf32_epilogue" "$m" "$n" "$k" "${tf32[@]}"
      for launch in '{"rung":"mma","tile_m":256,"tile_n":128,"tile_k":32,"warps_m":4,"warps_n":2,"buffers":3}' \
                    '{"rung":"mma","tile_m":256,"tile_n":128,"tile_k":16,"warps_m":4,"warps_n":2,"buffers":4}' \
                    '{"rung":"mma","tile_m":128,"tile_n":128,"tile_k":32,"warps_m":2,"warps_n":2,"buffers":4}' \
                    '{"rung":"mma","tile_m":128,"tile_n":256,"tile_k":16,"warps_m":2,"warps_n":4,"buffers":4}'; do
        tag=$(python3 -c 'import json,sys; l=json.loads(sys.argv[1]); print("%dx%dx%d_w%dx%d_b%d" % (l["tile_m"], l["tile_n"], l["tile_k"], l["warps_m"], l["warps_n"], l["buffers"]))' "$launch")
        gemm "r${round}_${mnk}_tf32_$tag" "$m" "$n" "$k" "${alone[@]}" "${tf32[@]}" --set "launch=$launch"
      done
    done
    python3 bench/peers/gemm_peers.py --shapes 4096x4096x4096,8192x4096x4096,4096x11008x4096 --tools cublas_fp32,cublas_tf32 \
      --repeat 20 2> "$OUT/logs/peers_r$round.err" | tee -a "$OUT/logs/peers.jsonl"
  done
} 2>&1 | tee "$OUT/tf32.txt"
pack
timeout 200 build-gpu/tests/gpu_tests -tc="every shipped config*,every activation*" > "$OUT/logs/gpu_tests.log" 2>&1
{ echo "gpu_tests: exit $?"; tail -3 "$OUT/logs/gpu_tests.log"; grep -m5 -A12 "ERROR" "$OUT/logs/gpu_tests.log"
for dtype in bfloat16 float16 float32; do
  for e in "x / 3 + x / 7" "x / 1e-3" "(x + 1) / 30 - x / 0.1"; do
    timeout 30 "$kjit" run configs/leaky_relu_expr.json --set dtype=$dtype --set "stages[0].expr=\"$e\"" --set measure.repeat=5 \
      --skip-ceiling --json "$OUT/logs/map.json" > "$OUT/logs/map.txt" 2>&1
    echo "$dtype '$e': exit $? $(grep -E '^  check' "$OUT/logs/map.txt")"
  done
  timeout 30 "$kjit" run configs/softmax.json --set dtype=$dtype --set 'stages[1].expr="exp((x - m) / 3)"' --set measure.repeat=5 --skip-ceiling \
    > "$OUT/logs/softmax.txt" 2>&1
  echo "$dtype softmax with exp((x - m) / 3): exit $? $(grep -E '^  check' "$OUT/logs/softmax.txt")"
done; } 2>&1 | tee "$OUT/division.txt"
pack
