#!/usr/bin/env bash
# Issue 43, fifth call: the wgmma rung at its defaults (three buffers and ping-pong; at head dim 64
# three consumers, four buffers, overlap without a skipped mask; plain tiles) at the grid beside
# cuDNN, FlashAttention-2 and FlexAttention in the same call; beside them, points with plain tiles
# off and with persistent blocks; the mma rung beside FlashAttention-2; the score modifiers beside
# FlexAttention's. The sixth call, right after it, verifies the odd shapes.
source bench/attention_call.sh
causal="col > row ? -inf : x"
echo "== smoke"
ok=1
for dim in 128 64 256; do for score in x "$causal"; do
  LIMIT=20 point "smoke_d${dim}_$([ "$score" = x ] && echo full || echo causal)" 1000 $dim 2 8 2 "$score" --set measure.repeat=3 --set measure.warmup=1 || ok=0
done; done
[ $ok = 1 ] || exit 1
echo "== the grid, at the defaults"
for p in 1024:128 2048:128 4096:128 8192:128 16384:128 1024:64 4096:64 16384:64; do
  seq=${p%:*}; dim=${p#*:}; batch=$((16384 / seq)); heads=$((2048 / dim))
  point "grid_s${seq}_d${dim}_full" $seq $dim $batch $heads $heads x
  point "grid_s${seq}_d${dim}_causal" $seq $dim $batch $heads $heads "$causal"
done 2>&1 | tee "$OUT/grid.txt"
point grid_s4096_d256_full 4096 256 4 8 8 x | tee -a "$OUT/grid.txt"
echo "== plain tiles off (launch.plain_tiles=false: every tile's softmax evaluates the score), beside the grid's"
for p in 2048:128 8192:128 4096:64; do
  seq=${p%:*}; dim=${p#*:}; batch=$((16384 / seq)); heads=$((2048 / dim))
  point "unplain_s${seq}_d${dim}_full" $seq $dim $batch $heads $heads x --set launch.plain_tiles=false
  point "unplain_s${seq}_d${dim}_causal" $seq $dim $batch $heads $heads "$causal" --set launch.plain_tiles=false
done 2>&1 | tee -a "$OUT/grid.txt"
point unplain_window 8192 128 2 16 16 "col > row || row - col >= 1024 ? -inf : x" --set launch.plain_tiles=false | tee -a "$OUT/grid.txt"
echo "== persistent blocks (launch.persistent=true), beside the grid's"
for p in 1024:128 4096:128 16384:128 4096:64; do
  seq=${p%:*}; dim=${p#*:}; batch=$((16384 / seq)); heads=$((2048 / dim))
  point "persistent_s${seq}_d${dim}_full" $seq $dim $batch $heads $heads x --set launch.persistent=true
  point "persistent_s${seq}_d${dim}_causal" $seq $dim $batch $heads $heads "$causal" --set launch.persistent=true
done 2>&1 | tee -a "$OUT/grid.txt"
point persistent_window 8192 128 2 16 16 "col > row || row - col >= 1024 ? -inf : x" --set launch.persistent=true | tee -a "$OUT/grid.txt"
pack
echo "== the mma rung"
{
for p in 2048:128 8192:128 4096:64; do
  seq=${p%:*}; dim=${p#*:}; batch=$((16384 / seq)); heads=$((2048 / dim))
  point "mma_s${seq}_d${dim}_full" $seq $dim $batch $heads $heads x --set 'launch.rung="mma"'
  point "mma_s${seq}_d${dim}_causal" $seq $dim $batch $heads $heads "$causal" --set 'launch.rung="mma"'
done
} 2>&1 | tee "$OUT/launches.txt"
echo "== score modifiers at 8192:128"
{
point mod_window 8192 128 2 16 16 "col > row || row - col >= 1024 ? -inf : x"
point mod_softcap 8192 128 2 16 16 "30 * tanh(x / 30)"
point mod_softcap_approx 8192 128 2 16 16 "30 * tanh(x / 30)" --set 'compile.tanh="approx"'
point mod_alibi 8192 128 2 16 16 "x + exp2(-8.0 * (head + 1) / 16) * (col - row)"
} 2>&1 | tee "$OUT/modifiers.txt"
pack
echo "== peers"
cd bench/peers
timeout 300 python3 attention_peers.py --repeat 10 --tools cudnn,flash,flex > "$OUT/peers.jsonl" 2> "$OUT/logs/peers.err"; echo "peers: exit $?"
for m in alibi softcap; do
  timeout 60 python3 attention_peers.py --repeat 10 --tools flex --grid 8192:128 --causal no --modifier $m >> "$OUT/peers.jsonl" 2>> "$OUT/logs/peers.err"; echo "peers $m: exit $?"
done
timeout 60 python3 attention_peers.py --repeat 10 --tools flex --grid 8192:128 --causal yes --modifier window >> "$OUT/peers.jsonl" 2>> "$OUT/logs/peers.err"; echo "peers window: exit $?"
cd - > /dev/null
python3 - "$OUT/peers.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    p = json.loads(line)
    print(p["seq"], p["head_dim"], "causal" if p["causal"] else "full", p.get("modifier"), p["tool"], round(p.get("tflops", 0)), p.get("median_ms"), p.get("first_call_s", ""), p.get("error", ""))
PY
pack
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
pack && rm -rf "$OUT/logs"
