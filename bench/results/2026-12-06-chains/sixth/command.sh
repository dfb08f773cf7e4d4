#!/usr/bin/env bash
# Issues 43 and 40, for the next step: Nsight Compute on the wgmma attention kernel at 8k × 128
# (plain, ALiBi, soft-capping: which pipes each keeps busy, and where its warps wait) and on the
# decode step 16 × 4096 × 4096 + bias at the defaults (where its warps wait). One launch each,
# after the variant is compiled and cached; --clock-control none leaves the clocks alone.
source bench/attention_call.sh   # build, $kjit, pack
sections=(--section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats
          --section MemoryWorkloadAnalysis --section InstructionStats)
profile() {  # NAME KERNEL-REGEX kjit run arguments…
  local name=$1 kernel=$2; shift 2
  "$kjit" run "$@" --set measure.warmup=1 --set measure.repeat=2 --skip-ceiling > "$OUT/logs/${name}_warm.txt" 2>&1
  timeout 150 ncu --clock-control none -k "regex:$kernel" --launch-skip 2 --launch-count 1 "${sections[@]}" \
      "$kjit" run "$@" --set measure.warmup=1 --set measure.repeat=2 --skip-ceiling > "$OUT/logs/ncu_$name.txt" 2>&1
  echo "$name: exit $?"
  grep -E "Duration|Issue Slots Busy|Executed Ipc A|Stall|Warp Cycles Per Issued|Pipe|Tensor|XU|FMA|ALU|DRAM Through|Memory Through" "$OUT/logs/ncu_$name.txt" | head -40
}
att=(configs/attention.json --set 'shape=[262144,128]' --set 'inputs.k.shape=[262144,128]' --set 'inputs.v.shape=[262144,128]'
     --set stages[0].batch=2 --set stages[0].heads=16 --set stages[0].kv_heads=16)
{
profile attention_plain attention "${att[@]}" --set 'stages[0].score="x"'
profile attention_alibi attention "${att[@]}" --set 'stages[0].score="x + exp2(-8.0 * (head + 1) / 16) * (col - row)"'
profile attention_softcap attention "${att[@]}" --set 'stages[0].score="30 * tanh(x / 30)"'
profile decode_m16 matmul configs/mlp_layer.json --set dtype=bfloat16 --set 'shape=[16,4096]' --set 'inputs.W.shape=[4096,4096]' \
    --set 'stages=[{"op":"matmul","input":"x_in","by":"W"},{"op":"bias","by":"b"}]'
} 2>&1 | tee "$OUT/ncu_summary.txt"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
pack
