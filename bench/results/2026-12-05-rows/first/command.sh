#!/usr/bin/env bash
# Issue 40, long rows: where a softmax over 1024 rows of 128,256 bfloat16 (a cluster of 8 blocks
# of 128, the row in shared memory; 0.66 of a copy) spends its time. The default beside: the
# online sum (max and sum in one pass, one cluster reduction fewer), fast math, both; a row kernel
# with no exp (the max, then x − m stored); RMS and layer norm; blocks of 256; then 50,257 and
# 32,000 columns the same way; Nsight Compute's pipes on the default and the online form.
source bench/attention_call.sh   # build, $kjit, pack
rows() {
  local name=$1 cfg=$2 cols=$3; shift 3
  timeout 60 "$kjit" run "configs/$cfg" --skip-ceiling --set dtype=bfloat16 --set "shape=[1024,$cols]" "$@" \
    --json "$OUT/logs/$name.json" > "$OUT/logs/$name.txt" 2>&1
  echo "$name: exit $? $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); r=r[0] if isinstance(r,list) else r; print(r.get("status"), "cold_us", round(1000*(r.get("kernel_cold_median_ms") or 0),1), "warm_us", round(1000*(r.get("kernel_median_ms") or 0),1), "regs", r.get("registers"), r.get("variant"))' "$OUT/logs/$name.json" 2>/dev/null || tail -2 "$OUT/logs/$name.txt")"
}
online='stages[2].formula="online"'
nexp='stages=[{"op":"reduce","fn":"max","as":"m","input":"logits"},{"op":"map","expr":"x - m"}]'
for round in 1 2; do for cols in 128256 50257 32000; do
  rows "r${round}_${cols}_default" softmax.json $cols
  rows "r${round}_${cols}_online" softmax.json $cols --set "$online"
  rows "r${round}_${cols}_fast" softmax.json $cols --set compile.fast_math=true
  rows "r${round}_${cols}_online_fast" softmax.json $cols --set "$online" --set compile.fast_math=true
  rows "r${round}_${cols}_noexp" softmax.json $cols --set "$nexp"
  rows "r${round}_${cols}_rms" rmsnorm.json $cols
  rows "r${round}_${cols}_layernorm" layernorm.json $cols
  [ $cols = 128256 ] && rows "r${round}_${cols}_online_b256" softmax.json $cols --set "$online" --set launch.block=256 --set launch.cluster=8 --set 'launch.row_cache="shared"' --set launch.streaming=true
done; done 2>&1 | tee "$OUT/rows.txt"
python3 - "$OUT/logs" <<'PY' | tee "$OUT/copy.txt"
import sys, torch
for cols in (128256, 50257, 32000):
    x = torch.randn(1024, cols, device="cuda", dtype=torch.bfloat16); y = torch.empty_like(x)
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda"); times = []
    for _ in range(25):
        flush.zero_(); a, b = torch.cuda.Event(True), torch.cuda.Event(True); a.record(); y.copy_(x); b.record(); b.synchronize(); times.append(a.elapsed_time(b) * 1000)
    times.sort(); print(f"copy {cols}: cold median {times[12]:.1f} us (min {times[0]:.1f}, max {times[-1]:.1f})")
PY
pack
sections=(--section SpeedOfLight --section ComputeWorkloadAnalysis --section InstructionStats --section WarpStateStats --section Occupancy)
for form in default online; do
  extra=(); [ $form = online ] && extra=(--set "$online")
  timeout 100 ncu --clock-control none -k regex:softmax --launch-skip 3 --launch-count 1 "${sections[@]}" \
    "$kjit" run configs/softmax.json --skip-ceiling --set dtype=bfloat16 --set "shape=[1024,128256]" "${extra[@]}" \
    --set measure.warmup=2 --set measure.repeat=3 > "$OUT/logs/ncu_128256_$form.txt" 2>&1; echo "ncu $form: exit $?"
  grep -E "Duration|DRAM Throughput|Compute \(SM\)|Pipe|pipe|Issue Slots|Executed Ipc|Stall|Achieved Occupancy" "$OUT/logs/ncu_128256_$form.txt" | head -24
done 2>&1 | tee "$OUT/ncu.txt"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
pack
