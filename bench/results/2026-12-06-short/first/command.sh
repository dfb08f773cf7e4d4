#!/usr/bin/env bash
# Issue 43's short sequences and modifiers: where a work item has few tiles of keys (1k and 2k,
# a 1,024-key window), does a persistent grid (the next item's queries copied while this one's
# last products run) close the gap to cuDNN? Soft-capping with tanh.approx; tiles of 176 keys at
# 4k and 8k; the mma rung at head dim 64 with tiles of 128 keys (FlashAttention-2's there).
# cuDNN and FlashAttention-2 at the grid in the same call.
source bench/attention_call.sh
causal="col > row ? -inf : x"
window="col > row || row - col >= 1024 ? -inf : x"
softcap="30 * tanh(x / 30)"
{
for p in 1024:128 2048:128 1024:64 4096:64; do
  seq=${p%:*}; dim=${p#*:}; batch=$((16384 / seq)); heads=$((2048 / dim))
  for kind in full causal; do
    score=x; [ $kind = causal ] && score=$causal
    point "wgmma_s${seq}_d${dim}_${kind}" $seq $dim $batch $heads $heads "$score"
    point "wgmma_s${seq}_d${dim}_${kind}_persistent" $seq $dim $batch $heads $heads "$score" --set launch.persistent=true
  done
done
pack
for seq in 4096 8192; do
  batch=$((16384 / seq))
  point "wgmma_s${seq}_d128_full_n176" $seq 128 $batch 16 16 x --set launch.block_n=176 --set launch.buffers=2
  point "wgmma_s${seq}_d128_full_n176_pingpong" $seq 128 $batch 16 16 x --set launch.block_n=176 --set launch.buffers=2 --set 'launch.schedule="pingpong"'
  point "wgmma_s${seq}_d128_full" $seq 128 $batch 16 16 x
done
point mod_plain 8192 128 2 16 16 x
point mod_window 8192 128 2 16 16 "$window"
point mod_window_persistent 8192 128 2 16 16 "$window" --set launch.persistent=true
point mod_softcap 8192 128 2 16 16 "$softcap"
point mod_softcap_approx 8192 128 2 16 16 "$softcap" --set 'compile.tanh="approx"'
point mod_alibi 8192 128 2 16 16 "x + exp2(-8.0 * (head + 1) / 16) * (col - row)"
pack
for p in 1024:64 4096:64 16384:64 1024:128 8192:128; do
  seq=${p%:*}; dim=${p#*:}; batch=$((16384 / seq)); heads=$((2048 / dim))
  for kind in full causal; do
    score=x; [ $kind = causal ] && score=$causal
    point "mma_s${seq}_d${dim}_${kind}" $seq $dim $batch $heads $heads "$score" --set 'launch.rung="mma"'
    [ $dim = 64 ] && point "mma_s${seq}_d${dim}_${kind}_n128" $seq $dim $batch $heads $heads "$score" --set 'launch.rung="mma"' --set launch.block_n=128
  done
done
pack
} 2>&1 | tee "$OUT/points.txt"
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
