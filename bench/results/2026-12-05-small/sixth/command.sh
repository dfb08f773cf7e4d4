#!/usr/bin/env bash
# Issue 40: a norm's per-column inputs (RMS norm's weight, layer norm's gamma and beta) loaded with
# the row where it waits in registers, beside the templates before (.deps/old-templates), which
# read them after the reductions: layer and RMS norm at 4096 × 768, 1024, 2048 and 4096 bfloat16,
# two rounds alternated (each run verified); PyTorch in the same call.
set -uo pipefail
source bench/attention_call.sh   # build, $kjit, pack
run1() {  # NAME CONFIG COLS [kjit run options]
  local name=$1 cfg=$2 cols=$3; shift 3
  timeout 60 "$kjit" run "configs/$cfg" --skip-ceiling --set dtype=bfloat16 --set "shape=[4096,$cols]" "$@" \
    --json "$OUT/logs/$name.json" > "$OUT/logs/$name.txt" 2>&1
  echo "$name: exit $? $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))[0]; print(r.get("status"), "cold_us", round(1000*(r.get("kernel_cold_median_ms") or 0),2), "regs", r.get("registers"), r.get("variant"))' "$OUT/logs/$name.json" 2>/dev/null || tail -2 "$OUT/logs/$name.txt")"
}
for round in 1 2; do for c in 768 1024 2048 4096; do for cfg in rmsnorm layernorm; do
  run1 "r${round}_${cfg}_${c}_new" $cfg.json $c
  run1 "r${round}_${cfg}_${c}_old" $cfg.json $c --templates .deps/old-templates/kernel_templates
done; done; done 2>&1 | tee "$OUT/runs.txt"
pack
(cd bench/peers && python3 row_peers.py --shapes 4096x768,4096x1024,4096x2048,4096x4096 --dtypes bfloat16 --ops layernorm,rmsnorm,softmax 2>/dev/null | grep -v '"triton_row"\|unfused' ) | python3 -c '
import json,sys
for l in sys.stdin:
    r=json.loads(l); print(r["op"], r["tool"], r["rows"], r["cols"], round(1000*r["median_ms"],2))' | tee "$OUT/peers.txt"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
pack
