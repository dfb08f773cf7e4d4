#!/usr/bin/env bash
# Issue 43 (asked of an H200; an H100 80GB HBM3 ran it): the wgmma rung at its defaults (plain tiles, three buffers and ping-pong;
# head dim 64: three consumers, four buffers) at the FlashAttention-3 grid, the mma rung at the
# same grid, and the score modifiers at 8k × 128; cuDNN, FlashAttention-2 and FlexAttention (with
# the same modifiers) in the same call. No H200 had run the rungs since plain tiles. Then
# fusion "separate" (new): timed beside the fused rungs and PyTorch eager (the same three steps),
# and the odd shapes verified on it.
source bench/attention_call.sh
causal="col > row ? -inf : x"
grid="1024:128 2048:128 4096:128 8192:128 16384:128 1024:64 4096:64 16384:64"
echo "== the grid, wgmma at the defaults"
for p in $grid; do
  seq=${p%:*}; dim=${p#*:}; batch=$((16384 / seq)); heads=$((2048 / dim))
  point "grid_s${seq}_d${dim}_full" $seq $dim $batch $heads $heads x
  point "grid_s${seq}_d${dim}_causal" $seq $dim $batch $heads $heads "$causal"
done 2>&1 | tee "$OUT/grid.txt"
pack
echo "== the grid, the mma rung"
for p in $grid; do
  seq=${p%:*}; dim=${p#*:}; batch=$((16384 / seq)); heads=$((2048 / dim))
  point "mma_s${seq}_d${dim}_full" $seq $dim $batch $heads $heads x --set 'launch.rung="mma"'
  point "mma_s${seq}_d${dim}_causal" $seq $dim $batch $heads $heads "$causal" --set 'launch.rung="mma"'
done 2>&1 | tee "$OUT/launches.txt"
echo "== separate: the scores in memory between three kernels"
for p in 1024:128 4096:128 1024:64 4096:64; do
  seq=${p%:*}; dim=${p#*:}; batch=$((16384 / seq)); heads=$((2048 / dim))
  point "separate_s${seq}_d${dim}_full" $seq $dim $batch $heads $heads x --set 'fusion="separate"'
  point "separate_s${seq}_d${dim}_causal" $seq $dim $batch $heads $heads "$causal" --set 'fusion="separate"'
done 2>&1 | tee "$OUT/separate.txt"
pack
echo "== separate: odd shapes (verification), four at a time"
{
for seq in 1 17 1000 4097; do for dim in 64 96 128; do for kv in 8 2 1; do for tag in full causal; do
  echo "$seq $dim $kv $tag bfloat16"
done; done; done; done
for dim in 64 128; do for tag in full causal window; do echo "4097 $dim 2 $tag float16"; echo "1000 $dim 1 $tag float16"; done; done
} | xargs -P 4 -L 1 bash -c 'case $3 in full) score=x;; causal) score="col > row ? -inf : x";; window) score="col > row || row - col >= 300 ? -inf : x";; esac
  LIMIT=30 point "odd_separate_${4}_s${0}_d${1}_kv${2}_${3}" $0 $1 2 8 $2 "$score" --set "fusion=\"separate\"" --set "dtype=\"$4\"" \
    --set measure.repeat=3 --set measure.warmup=1' > "$OUT/odd.txt" 2>&1
echo "odd shapes failing: $(grep -vc 'exit 0' "$OUT/odd.txt") of $(wc -l < "$OUT/odd.txt")"; grep -v "exit 0" "$OUT/odd.txt" | head -20
pack
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
timeout 240 python3 attention_peers.py --repeat 10 --tools cudnn,flash,flex > "$OUT/peers.jsonl" 2> "$OUT/logs/peers.err"; echo "peers: exit $?"
timeout 60 python3 attention_peers.py --repeat 5 --tools eager --grid 1024:128,4096:128,1024:64,4096:64 >> "$OUT/peers.jsonl" 2>> "$OUT/logs/peers.err"; echo "peers eager: exit $?"
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
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
pack && rm -rf "$OUT/logs"
