#!/usr/bin/env bash
# After the second call: the mma rung's threads test one tile after another again (the warp's
# ballot is the wgmma rung's alone: it cost the mma rung registers, 0 → 232 bytes spilled at head
# dim 64 causal). The mma rung at the grid beside FlashAttention-2, its odd shapes, the wgmma
# rung's masked points again; then issue 40's benchmark (bench/defaults/run.py: every case at
# the defaults, two rounds, the peers in the same call) and its table.
source bench/attention_call.sh
causal="col > row ? -inf : x"
window="col > row || row - col >= 1024 ? -inf : x"
{
for p in 1024:128 2048:128 4096:128 8192:128 16384:128 1024:64 4096:64 16384:64; do
  seq=${p%:*}; dim=${p#*:}; batch=$((16384 / seq)); heads=$((2048 / dim))
  point "mma_s${seq}_d${dim}_full" $seq $dim $batch $heads $heads x --set 'launch.rung="mma"'
  point "mma_s${seq}_d${dim}_causal" $seq $dim $batch $heads $heads "$causal" --set 'launch.rung="mma"'
done
point mma_window 8192 128 2 16 16 "$window" --set 'launch.rung="mma"'
point wgmma_causal 8192 128 2 16 16 "$causal"
point wgmma_window 8192 128 2 16 16 "$window"
pack
} 2>&1 | tee "$OUT/points.txt"
for seq in 1 17 1000 4097; do for dim in 64 96 128; do for kv in 8 2 1; do for tag in full causal window; do
  echo "mma $seq $dim $kv $tag"
done; done; done; done | xargs -P 6 -L 1 bash -c 'score=x; [ $4 = causal ] && score="col > row ? -inf : x"; [ $4 = window ] && score="col > row || row - col >= 16 ? -inf : x"; LIMIT=30 point "odd_${0}_s${1}_d${2}_kv${3}_${4}" $1 $2 2 8 $3 "$score" --set "launch.rung=\"$0\"" --set measure.repeat=3 --set measure.warmup=1' > "$OUT/odd.txt" 2>&1
echo "odd shapes failing: $(grep -vc 'exit 0 PASS' "$OUT/odd.txt") of $(wc -l < "$OUT/odd.txt")"; grep -v "exit 0 PASS" "$OUT/odd.txt" | head -20
(cd bench/peers && timeout 90 python3 attention_peers.py --repeat 10 --tools flash > "$OUT/logs/peers.jsonl" 2> "$OUT/logs/peers.err"; echo "peers: exit $?")
python3 - "$OUT/logs/peers.jsonl" <<'PY' | tee "$OUT/peers.txt"
import json, sys
for line in open(sys.argv[1]):
    p = json.loads(line)
    print(p["seq"], p["head_dim"], "causal" if p["causal"] else "full", p["tool"], round(p.get("tflops", 0)), p.get("median_ms"), p.get("error", ""))
PY
pack
timeout 330 python3 bench/defaults/run.py "$kjit" "$OUT/logs/defaults-run" --rounds 2 > "$OUT/logs/defaults.txt" 2>&1
echo "defaults: exit $?"
python3 scripts/defaults_table.py "$OUT/logs/defaults-run" > "$OUT/table.md" 2>&1; cat "$OUT/table.md"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
pack
