#!/usr/bin/env bash
# After the first call: a scored tile's keys past the last are masked in a pass of their own (the
# other tiles' scores test nothing), a warp finds the next tile a mask leaves (32 tiles a ballot),
# and the mma rung takes tiles of 128 keys up to head dim 64. The score modifiers beside the
# templates before (.deps/old-templates: the commit before), both rungs at the grid, the odd
# shapes verified on both rungs (causal, a window of 16, none), then cuDNN, FlashAttention-2 and
# FlexAttention with each modifier in the same call.
source bench/attention_call.sh
old=(--templates .deps/old-templates/kernel_templates)
causal="col > row ? -inf : x"
window="col > row || row - col >= 1024 ? -inf : x"
softcap="30 * tanh(x / 30)"
alibi="x + exp2(-8.0 * (head + 1) / 16) * (col - row)"
{
for tag in new old; do
  extra=(); [ $tag = old ] && extra=("${old[@]}")
  point "${tag}_plain" 8192 128 2 16 16 x "${extra[@]}"
  point "${tag}_causal" 8192 128 2 16 16 "$causal" "${extra[@]}"
  point "${tag}_window" 8192 128 2 16 16 "$window" "${extra[@]}"
  point "${tag}_softcap" 8192 128 2 16 16 "$softcap" "${extra[@]}"
  point "${tag}_alibi" 8192 128 2 16 16 "$alibi" "${extra[@]}"
  point "${tag}_mma_window" 8192 128 2 16 16 "$window" --set 'launch.rung="mma"' "${extra[@]}"
  timeout 60 "$kjit" run configs/attention_documents.json --skip-ceiling "${extra[@]}" --json "$OUT/logs/${tag}_documents.json" > "$OUT/logs/${tag}_documents.txt" 2>&1
  echo "${tag}_documents: exit $? $(grep -E 'kernel .*(cold|steady)|TFLOP|PASS|FAIL' "$OUT/logs/${tag}_documents.txt" | head -4 | tr '\n' ' ')"
done
pack
for rung in wgmma mma; do
  for p in 1024:128 2048:128 4096:128 8192:128 16384:128 1024:64 4096:64 16384:64; do
    seq=${p%:*}; dim=${p#*:}; batch=$((16384 / seq)); heads=$((2048 / dim))
    point "${rung}_s${seq}_d${dim}_full" $seq $dim $batch $heads $heads x --set "launch.rung=\"$rung\""
    point "${rung}_s${seq}_d${dim}_causal" $seq $dim $batch $heads $heads "$causal" --set "launch.rung=\"$rung\""
  done
  pack
done
} 2>&1 | tee "$OUT/points.txt"
for rung in wgmma mma; do
  for seq in 1 17 1000 4097; do for dim in 64 96 128; do for kv in 8 2 1; do for tag in full causal window; do
    echo "$rung $seq $dim $kv $tag"
  done; done; done; done
done | xargs -P 4 -L 1 bash -c 'score=x; [ $4 = causal ] && score="col > row ? -inf : x"; [ $4 = window ] && score="col > row || row - col >= 16 ? -inf : x"; dtype=bfloat16; [ $((${1} % 2)) = 1 ] && [ $4 = full ] && dtype=float16; LIMIT=30 point "odd_${0}_s${1}_d${2}_kv${3}_${4}_${dtype}" $1 $2 2 8 $3 "$score" --set "launch.rung=\"$0\"" --set "dtype=\"$dtype\"" --set measure.repeat=3 --set measure.warmup=1' > "$OUT/odd.txt" 2>&1
echo "odd shapes failing: $(grep -vc 'exit 0 PASS' "$OUT/odd.txt") of $(wc -l < "$OUT/odd.txt")"; grep -v "exit 0 PASS" "$OUT/odd.txt" | head -20
pack
cd bench/peers
{
  timeout 150 python3 attention_peers.py --repeat 10 --tools cudnn,flash
  for m in softcap alibi; do timeout 60 python3 attention_peers.py --repeat 10 --tools flex --grid 8192:128 --causal no --modifier $m; done
  timeout 60 python3 attention_peers.py --repeat 10 --tools flex --grid 8192:128 --causal yes --modifier window
  timeout 60 python3 attention_peers.py --repeat 10 --tools flex,cudnn --grid 8192:128 --causal yes
} > "$OUT/peers.jsonl" 2> "$OUT/logs/peers.err"; echo "peers: exit $?"
cd - > /dev/null
python3 - "$OUT/peers.jsonl" <<'PY' | tee "$OUT/peers.txt"
import json, sys
for line in open(sys.argv[1]):
    p = json.loads(line)
    print(p["seq"], p["head_dim"], "causal" if p["causal"] else "full", p["tool"], p.get("modifier", ""), round(p.get("tflops", 0)), p.get("median_ms"), p.get("first_call_s", ""), p.get("error", ""))
PY
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
pack
