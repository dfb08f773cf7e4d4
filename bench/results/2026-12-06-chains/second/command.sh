#!/usr/bin/env bash
# Issue 43: the score modifiers at 8192 × 128 (batch 2, 16 heads) after ALiBi's positions became
# floats (a conversion a tile, not a score) and soft-capping's x / 30 a product, beside the
# unmodified kernel, two rounds; the separate kernels with ALiBi (verified); FlexAttention with the
# same modifiers and cuDNN unmodified in the same call.
set -uo pipefail
source bench/attention_call.sh   # build, $kjit, point NAME SEQ DIM BATCH HEADS KV SCORE, pack
alibi="x + exp2(-8.0 * (head + 1) / 16) * (col - row)"
for round in 1 2; do
  point "r${round}_plain" 8192 128 2 16 16 "x"
  point "r${round}_alibi" 8192 128 2 16 16 "$alibi"
  point "r${round}_softcap" 8192 128 2 16 16 "30 * tanh(x / 30)"
  point "r${round}_window" 8192 128 2 16 16 "col > row || row - col >= 1024 ? -inf : x"
  point "r${round}_causal" 8192 128 2 16 16 "col > row ? -inf : x"
done 2>&1 | tee "$OUT/modifiers.txt"
{
point alibi_mma 8192 128 2 16 16 "$alibi" --set 'launch.rung="mma"'
point plain_mma 8192 128 2 16 16 "x" --set 'launch.rung="mma"'
point alibi_separate 4096 128 2 16 16 "$alibi" --set 'fusion="separate"'
point alibi_odd 1000 96 2 8 2 "$alibi"
point alibi_odd_fp16 4097 64 1 8 8 "$alibi" --set 'dtype="float16"'
point alibi_odd_separate 1000 64 2 8 2 "$alibi" --set 'fusion="separate"'
} 2>&1 | tee "$OUT/more.txt"
pack
cd bench/peers
timeout 90 python3 attention_peers.py --repeat 10 --tools cudnn --grid 8192:128 --causal both > "$OUT/peers.jsonl" 2> "$OUT/logs/peers.err"; echo "peers cudnn: exit $?"
for m in alibi softcap; do
  timeout 60 python3 attention_peers.py --repeat 10 --tools flex --grid 8192:128 --causal no --modifier $m >> "$OUT/peers.jsonl" 2>> "$OUT/logs/peers.err"; echo "peers $m: exit $?"
done
timeout 60 python3 attention_peers.py --repeat 10 --tools flex --grid 8192:128 --causal yes --modifier window >> "$OUT/peers.jsonl" 2>> "$OUT/logs/peers.err"; echo "peers window: exit $?"
cd - > /dev/null
python3 - "$OUT/peers.jsonl" <<'PY' | tee "$OUT/peers.txt"
import json, sys
for line in open(sys.argv[1]):
    p = json.loads(line)
    print(p["seq"], p["head_dim"], "causal" if p["causal"] else "full", p.get("modifier"), p["tool"], round(p.get("tflops", 0)), p.get("median_ms"), p.get("first_call_s", ""), p.get("error", ""))
PY
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
pack
