#!/usr/bin/env bash
# Why a short work item costs more: Nsight Compute on the wgmma rung at 1k × 128 (8 tiles of keys
# an item) and at 16k × 128 (128 tiles), and on cuDNN's kernel at 1k × 128, one cold launch each
# (ncu flushes the caches before it; --clock-control none leaves the clocks alone).
source bench/attention_call.sh
sections=(--section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats
          --section SchedulerStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis)
att() {  # att SEQ: configs/attention.json at the grid point SEQ × 128
  local seq=$1 batch=$((16384 / $1))
  echo configs/attention.json --skip-ceiling --set "shape=[$((batch * 16 * seq)),128]" \
    --set "inputs.k.shape=[$((batch * 16 * seq)),128]" --set "inputs.v.shape=[$((batch * 16 * seq)),128]" \
    --set "stages[0].batch=$batch" --set "stages[0].heads=16" --set measure.warmup=1 --set measure.repeat=2
}
for seq in 1024 16384; do
  "$kjit" run $(att $seq) > "$OUT/logs/warm_$seq.log" 2>&1  # compiled once, outside the profile
  timeout 150 ncu --clock-control none -k regex:attention --launch-skip 1 --launch-count 1 "${sections[@]}" \
      "$kjit" run $(att $seq) > "$OUT/ncu_kjit_$seq.txt" 2>&1; echo "ncu kjit $seq: exit $?"
done
cat > "$OUT/logs/cudnn.py" <<'PY'
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
q, k, v = (torch.randn(16, 16, 1024, 128, device="cuda", dtype=torch.bfloat16) for _ in range(3))
with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
    for _ in range(3):
        torch.nn.functional.scaled_dot_product_attention(q, k, v)
torch.cuda.synchronize()
PY
timeout 150 ncu --clock-control none -k regex:"sdpa|fmha|attn|attention" --launch-skip 2 --launch-count 1 "${sections[@]}" \
    python3 "$OUT/logs/cudnn.py" > "$OUT/ncu_cudnn_1024.txt" 2>&1; echo "ncu cudnn: exit $?"
grep -h -E "^  [a-z_]+.*\(|Duration|Elapsed Cycles|SM Busy|Compute \(SM\) Throughput|Issue Slots Busy|No Eligible|Active Warps Per Scheduler|Eligible Warps|Warp Cycles Per Issued|Registers Per|Block Size|Grid Size|Achieved Occupancy|Executed Ipc A|Tensor|Memory Throughput|DRAM Throughput" \
    "$OUT"/ncu_*.txt | tee "$OUT/summary.txt"
pack
