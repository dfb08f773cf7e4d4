#!/usr/bin/env bash
# Issue 43 on the H200: the wgmma rung at its defaults and the mma rung at the FlashAttention-3
# grid (16,384 tokens a point, heads × head dim = 2,048), cuDNN and FlashAttention-2 in the same
# call. No H200 had run the rungs at their defaults since plain tiles.
source bench/attention_call.sh
causal="col > row ? -inf : x"
grid="1024:128 2048:128 4096:128 8192:128 16384:128 1024:64 4096:64 16384:64"
for rung in wgmma mma; do
  for p in $grid; do
    seq=${p%:*}; dim=${p#*:}; batch=$((16384 / seq)); heads=$((2048 / dim))
    point "${rung}_s${seq}_d${dim}_full" $seq $dim $batch $heads $heads x --set "launch.rung=\"$rung\""
    point "${rung}_s${seq}_d${dim}_causal" $seq $dim $batch $heads $heads "$causal" --set "launch.rung=\"$rung\""
  done
  pack
done 2>&1 | tee "$OUT/grid.txt"
cd bench/peers
timeout 200 python3 attention_peers.py --repeat 10 --tools cudnn,flash > "$OUT/peers.jsonl" 2> "$OUT/logs/peers.err"; echo "peers: exit $?"
cd - > /dev/null
python3 - "$OUT/peers.jsonl" <<'PY' | tee "$OUT/peers.txt"
import json, sys
for line in open(sys.argv[1]):
    p = json.loads(line)
    print(p["seq"], p["head_dim"], "causal" if p["causal"] else "full", p["tool"], round(p.get("tflops", 0)), p.get("median_ms"), p.get("error", ""))
PY
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
pack
