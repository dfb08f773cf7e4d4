#!/usr/bin/env bash
# The mma rung copying a whole tile of keys and values with no row tested (the count a constant:
# cp.async's bounds tests leave the loop but at the last tile), beside the templates before
# (.deps/old-templates: the third call's), alternated, at the grid; FlashAttention-2 in the call.
source bench/attention_call.sh
causal="col > row ? -inf : x"
{
for round in 1 2; do
for p in 1024:128 4096:128 16384:128 1024:64 4096:64 16384:64; do
  seq=${p%:*}; dim=${p#*:}; batch=$((16384 / seq)); heads=$((2048 / dim))
  for kind in full causal; do
    score=x; [ $kind = causal ] && score=$causal
    point "r${round}_new_s${seq}_d${dim}_${kind}" $seq $dim $batch $heads $heads "$score" --set 'launch.rung="mma"'
    point "r${round}_old_s${seq}_d${dim}_${kind}" $seq $dim $batch $heads $heads "$score" --set 'launch.rung="mma"' --templates .deps/old-templates/kernel_templates
  done
done
pack
done
} 2>&1 | tee "$OUT/points.txt"
(cd bench/peers && timeout 90 python3 attention_peers.py --repeat 10 --tools flash --grid 1024:128,4096:128,16384:128,1024:64,4096:64,16384:64 > "$OUT/logs/peers.jsonl" 2> "$OUT/logs/peers.err"; echo "peers: exit $?")
python3 - "$OUT/logs/peers.jsonl" <<'PY' | tee "$OUT/peers.txt"
import json, sys
for line in open(sys.argv[1]):
    p = json.loads(line)
    print(p["seq"], p["head_dim"], "causal" if p["causal"] else "full", p["tool"], round(p.get("tflops", 0)), p.get("median_ms"), p.get("error", ""))
PY
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
pack
