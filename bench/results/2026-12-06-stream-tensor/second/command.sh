#!/usr/bin/env bash
# The stream rung's tensor-core rule (16 warps, unsplit, one step in flight; 64 or 32 columns) as
# "auto" up to 16 rows: the gpu tests of both stream paths, CUDA cores beside tensor cores at 1 to
# 4 rows, the decode shapes at the defaults beside cuBLASLt's addmm (two rounds), then issue 40's
# GEMM set at the defaults (bench/defaults/run.py --only its GEMM cases, two rounds, the peers in the call).
set -uo pipefail
source bench/gemm_call.sh
cmake --build build-gpu --target gpu_tests -j "$(nproc)" >> "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
timeout 200 build-gpu/tests/gpu_tests -tc="decode steps*" > "$OUT/logs/gpu_tests.log" 2>&1
{ echo "gpu_tests: exit $?"; tail -3 "$OUT/logs/gpu_tests.log"; grep -m5 -B8 -A12 "ERROR" "$OUT/logs/gpu_tests.log"; } | tee "$OUT/gpu_tests.txt"
pack
shapes=1x4096x4096,2x4096x4096,3x4096x4096,4x4096x4096,8x4096x4096,16x4096x4096,16x11008x4096,16x4096x11008,16x3072x768,16x768x3072,8x5120x5120,12x14336x4096
{
for round in 1 2; do
  for mnk in ${shapes//,/ }; do
    IFS=x read -r m n k <<< "$mnk"
    gemm "r${round}_${mnk}_default" "$m" "$n" "$k" bfloat16
    if [ "$m" -le 4 ]; then
      gemm "r${round}_${mnk}_cuda" "$m" "$n" "$k" bfloat16 --set 'launch={"rung":"stream","cores":"cuda"}'
      gemm "r${round}_${mnk}_tensor" "$m" "$n" "$k" bfloat16 --set 'launch={"rung":"stream","cores":"tensor"}'
    fi
  done
  python3 bench/peers/gemm_peers.py --shapes $shapes --tools cublaslt_bias --no-fp32 --repeat 30 2> "$OUT/logs/peers_r$round.err" | tee -a "$OUT/logs/peers.jsonl"
  pack
done
} 2>&1 | tee "$OUT/decode.txt"
timeout 300 python3 bench/defaults/run.py "$kjit" "$OUT/logs/defaults-run" --rounds 2 --only llama_up_silu,llama_down,gpt2_up_gelu,gpt2_up_gelu_8k,gpt2_down_bias,decode_m1,decode_m16,decode_m64 > "$OUT/logs/defaults.txt" 2>&1
echo "defaults: exit $?"
python3 scripts/defaults_table.py "$OUT/logs/defaults-run" > "$OUT/table.md" 2>&1; cat "$OUT/table.md"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
pack
