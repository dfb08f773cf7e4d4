#!/usr/bin/env bash
# Issue 43, fifth call: the wgmma rung at its new defaults (three buffers and ping-pong; at head
# dim 64 three consumers, four buffers, overlap without a skipped mask; plain tiles, and beside
# them the same points with plain tiles off). The grid beside cuDNN,
# FlashAttention-2 and FlexAttention in the same call; the mma rung beside FlashAttention-2; the
# score modifiers beside FlexAttention's; the odd shapes verified at the new defaults (four at a
# time: verification, not timing); document masks whose tiles the sorted ids skip, beside
# FlexAttention's block mask; compile cold and a cache hit.
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
echo "== odd shapes (verification), four at a time"
{
for seq in 1 17 1000 4097; do for dim in 64 96 128; do for kv in 8 2 1; do for tag in full causal; do
  echo "wgmma $seq $dim $kv $tag bfloat16"
done; done; done; done
for seq in 17 1000 4097; do for dim in 64 128; do for kv in 8 1; do for tag in full causal window; do
  echo "mma $seq $dim $kv $tag bfloat16"
done; done; done; done
for dim in 64 128; do for tag in full causal window; do echo "wgmma 4097 $dim 2 $tag float16"; echo "wgmma 1000 $dim 1 $tag float16"; done; done
} | xargs -P 4 -L 1 bash -c 'case $4 in full) score=x;; causal) score="col > row ? -inf : x";; window) score="col > row || row - col >= 300 ? -inf : x";; esac
  LIMIT=30 point "odd_${0}_${5}_s${1}_d${2}_kv${3}_${4}" $1 $2 2 8 $3 "$score" --set "launch.rung=\"$0\"" --set "dtype=\"$5\"" --set measure.repeat=3 --set measure.warmup=1' > "$OUT/odd.txt" 2>&1
echo "odd shapes failing: $(grep -vc 'exit 0' "$OUT/odd.txt") of $(wc -l < "$OUT/odd.txt")"; grep -v "exit 0" "$OUT/odd.txt" | head -20
echo "== documents: tiles skipped by the sorted ids (attention_documents.json, 4 × 2048 tokens, 8 documents, causal), against the same ids unsorted (causal skipping alone)"
{
for sorted in true false; do
  timeout 60 "$kjit" run configs/attention_documents.json --skip-ceiling --set "inputs.doc.sorted=$sorted" \
    --json "$OUT/logs/documents_sorted_$sorted.json" > "$OUT/logs/documents_sorted_$sorted.txt" 2>&1
  echo "documents sorted=$sorted: exit $? $(grep -E 'TFLOP|PASS|FAIL' "$OUT/logs/documents_sorted_$sorted.txt" | head -2 | tr '\n' ' ')"
done
for seq in 17 1000 4097; do for rung in wgmma mma; do for score in "doc[row] != doc[col] ? -inf : x" "col > row || doc[row] != doc[col] ? -inf : x"; do
  docs="{\"shape\":[2,$seq],\"fill\":\"uniform\",\"low\":0,\"high\":5,\"round\":\"floor\",\"sorted\":true}"
  LIMIT=30 point "documents_${rung}_s${seq}_$([ "${score:0:3}" = col ] && echo causal || echo full)" $seq 128 2 8 2 "$score" \
    --set "inputs.doc=$docs" --set "launch.rung=\"$rung\"" --set measure.repeat=3 --set measure.warmup=1
done; done; done
} 2>&1 | tee "$OUT/documents.txt"
timeout 90 python3 bench/peers/attention_peers.py --repeat 10 --tools flex,cudnn --grid 2048:128 --causal yes --documents 8 --width 2048 --tokens 8192 >> "$OUT/peers.jsonl" 2>> "$OUT/logs/peers.err"; echo "peers documents: exit $?"
echo "== compile cold, then a cache hit"
rm -rf /tmp/kjit-cold && KJIT_CACHE_DIR=/tmp/kjit-cold "$kjit" compile configs/attention_causal.json > "$OUT/logs/compile_cold.txt" 2>&1
grep -E "compile |NVRTC|ptxas|total" "$OUT/logs/compile_cold.txt"
KJIT_CACHE_DIR=/tmp/kjit-cold "$kjit" run configs/attention_causal.json --skip-ceiling > "$OUT/logs/cache_hit.txt" 2>&1
grep -E "compile |cache|module|first launch" "$OUT/logs/cache_hit.txt"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
pack && rm -rf "$OUT/logs"
