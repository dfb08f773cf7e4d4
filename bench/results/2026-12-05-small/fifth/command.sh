#!/usr/bin/env bash
# Issue 40 on the H200 (if lent), where the fourth call left kjit short: RMS norm at 4096 × 768
# (7.9 µs beside eager's 7.6) and layer norm, over the row mappings and blocks; long-row softmax
# (0.74-0.76 of a copy) over copy groups, blocks and streaming; the 4096 × 768 transpose over tiles
# and blocks. Two rounds; PyTorch and a copy in the same call.
set -uo pipefail
source bench/attention_call.sh   # build, $kjit, pack
run1() {  # NAME CONFIG ROWS COLS [kjit run options]
  local name=$1 cfg=$2 nrows=$3 cols=$4; shift 4
  timeout 60 "$kjit" run "configs/$cfg" --skip-ceiling --set dtype=bfloat16 --set "shape=[$nrows,$cols]" "$@" \
    --json "$OUT/logs/$name.json" > "$OUT/logs/$name.txt" 2>&1
  echo "$name: exit $? $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); r=r[0] if isinstance(r,list) else r; print(r.get("status"), "cold_us", round(1000*(r.get("kernel_cold_median_ms") or 0),2), "regs", r.get("registers"), r.get("variant"))' "$OUT/logs/$name.json" 2>/dev/null || tail -2 "$OUT/logs/$name.txt")"
}
warp='launch.row_mapping="warp"'
for round in 1 2; do
  for c in 768 1024; do for cfg in rmsnorm layernorm; do
    run1 "r${round}_${cfg}_${c}_default" $cfg.json 4096 $c
    for b in 32 64 256; do run1 "r${round}_${cfg}_${c}_warp$b" $cfg.json 4096 $c --set "$warp" --set launch.block=$b; done
    run1 "r${round}_${cfg}_${c}_warp128_streaming" $cfg.json 4096 $c --set launch.streaming=true
    run1 "r${round}_${cfg}_${c}_block64" $cfg.json 4096 $c --set 'launch.row_mapping="block"' --set launch.block=64
  done; done
  for c in 50257 128256; do
    run1 "r${round}_softmax_${c}_default" softmax.json 1024 $c
    run1 "r${round}_softmax_${c}_groups16" softmax.json 1024 $c --set launch.copy_groups=16
    run1 "r${round}_softmax_${c}_groups4" softmax.json 1024 $c --set launch.copy_groups=4
    run1 "r${round}_softmax_${c}_nostream" softmax.json 1024 $c --set launch.streaming=false
  done
  run1 "r${round}_softmax_128256_b256" softmax.json 1024 128256 --set launch.block=256 --set launch.cluster=8 --set 'launch.row_cache="shared"' --set launch.streaming=true
  run1 "r${round}_softmax_50257_b1024" softmax.json 1024 50257 --set launch.block=1024
  for tb in 32:64 32:128 64:256 64:512; do
    run1 "r${round}_transpose_t${tb%:*}_b${tb#*:}" transpose.json 4096 768 --set launch.tile=${tb%:*} --set launch.block=${tb#*:}
  done
  run1 "r${round}_transpose_padded" transpose.json 4096 768 --set 'launch.layout="padded"'
  pack
done 2>&1 | tee "$OUT/runs.txt"
(cd bench/peers && python3 row_peers.py --shapes 4096x768,4096x1024 --dtypes bfloat16 --ops layernorm,rmsnorm,softmax 2>/dev/null | grep -v '"triton_row"\|unfused' ) | python3 -c '
import json,sys
for l in sys.stdin:
    r=json.loads(l); print(r["op"], r["tool"], r["rows"], r["cols"], round(1000*r["median_ms"],2))' | tee "$OUT/peers.txt"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
pack
