#!/usr/bin/env bash
# Short sequences on the wgmma rung, where it stays furthest behind cuDNN (1k × 64 causal at
# 0.70): launches around the defaults at 1k and 2k, head dims 64 and 128, full and causal —
# tiles of 64 keys (four and six buffers), two consumers at head dim 64, each schedule — and the
# defaults again beside them. cuDNN at those points in the same call.
source bench/attention_call.sh
causal="col > row ? -inf : x"
launches128=("default:" "n64_b4_pingpong:launch.block_n=64 launch.buffers=4 launch.schedule=\"pingpong\""
  "n64_b6_pingpong:launch.block_n=64 launch.buffers=6 launch.schedule=\"pingpong\""
  "n64_b4_overlap:launch.block_n=64 launch.buffers=4 launch.schedule=\"overlap\""
  "n128_b3_overlap:launch.buffers=3 launch.schedule=\"overlap\"")
launches64=("default:" "c2_b4_pingpong:launch.consumers=2 launch.buffers=4 launch.schedule=\"pingpong\""
  "c2_b4_overlap:launch.consumers=2 launch.buffers=4 launch.schedule=\"overlap\""
  "c3_n64_b6_pingpong:launch.block_n=64 launch.buffers=6 launch.schedule=\"pingpong\""
  "c3_b4_pingpong:launch.buffers=4 launch.schedule=\"pingpong\""
  "c3_b4_overlap:launch.buffers=4 launch.schedule=\"overlap\"")
{
for p in 1024:128 2048:128 1024:64 2048:64; do
  seq=${p%:*}; dim=${p#*:}; batch=$((16384 / seq)); heads=$((2048 / dim))
  if [ $dim = 128 ]; then launches=("${launches128[@]}"); else launches=("${launches64[@]}"); fi
  for kind in full causal; do
    score=x; [ $kind = causal ] && score=$causal
    for l in "${launches[@]}"; do
      name=${l%%:*}; sets=(); for kv in ${l#*:}; do sets+=(--set "$kv"); done
      point "${name}_s${seq}_d${dim}_${kind}" $seq $dim $batch $heads $heads "$score" "${sets[@]}"
    done
  done
done
pack
} 2>&1 | tee "$OUT/points.txt"
(cd bench/peers && timeout 90 python3 attention_peers.py --repeat 10 --tools cudnn --grid 1024:128,2048:128,1024:64,2048:64 > "$OUT/peers.jsonl" 2> "$OUT/logs/peers.err"; echo "peers: exit $?")
python3 - "$OUT/peers.jsonl" <<'PY' | tee "$OUT/peers.txt"
import json, sys
for line in open(sys.argv[1]):
    p = json.loads(line)
    print(p["seq"], p["head_dim"], "causal" if p["causal"] else "full", p["tool"], round(p.get("tflops", 0)), p.get("median_ms"), p.get("error", ""))
PY
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
pack
