#!/usr/bin/env bash
# Issue 40: why layer norm over 1024 × 128,256 bfloat16 is slower in 8 groups of copies (252 µs)
# than in one (232), where RMS norm is faster (198 against 236): Nsight Compute's speed of light,
# warp states and memory on both, kjit alone built (the last of the session's device time).
source bench/attention_call.sh   # build, $kjit, pack
sections=(--section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis --section Occupancy --section SchedulerStats)
for g in 1 8; do
  timeout 60 ncu --clock-control none -k regex:layernorm --launch-skip 2 --launch-count 1 "${sections[@]}" \
    "$kjit" run configs/layernorm.json --skip-ceiling --set dtype=bfloat16 --set "shape=[1024,128256]" --set launch.copy_groups=$g \
    --set measure.warmup=2 --set measure.repeat=2 > "$OUT/logs/ncu_layernorm_groups$g.txt" 2>&1; echo "ncu groups $g: exit $?"
  grep -E "Duration|DRAM Throughput|Compute \(SM\)|Registers|Achieved Occupancy|Stall|Eligible|Issued Warp|No Eligible|L2 Hit|Mem Busy" "$OUT/logs/ncu_layernorm_groups$g.txt" | head -20
done 2>&1 | tee "$OUT/ncu.txt"
pack
