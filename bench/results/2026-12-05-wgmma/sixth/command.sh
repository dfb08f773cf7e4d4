#!/usr/bin/env bash
# Issue 43, sixth call, right after the fifth on the same machine: the odd shapes verified at the
# defaults and with persistent blocks (four at a time: verification, not timing), document masks
# whose tiles the sorted ids skip, compile cold and a cache hit.
source bench/attention_call.sh
echo "== odd shapes (verification), four at a time"
{
for seq in 1 17 1000 4097; do for dim in 64 96 128; do for kv in 8 2 1; do for tag in full causal; do
  echo "wgmma $seq $dim $kv $tag bfloat16"
done; done; done; done
for seq in 17 1000 4097; do for dim in 64 128; do for kv in 8 1; do for tag in full causal window; do
  echo "mma $seq $dim $kv $tag bfloat16"
done; done; done; done
for dim in 64 128; do for tag in full causal window; do echo "wgmma 4097 $dim 2 $tag float16"; echo "wgmma 1000 $dim 1 $tag float16"; done; done
for seq in 17 1000 4097 9000; do for dim in 64 128; do for tag in full causal window; do echo "wgmma $seq $dim 2 $tag bfloat16 persistent"; done; done; done
} | xargs -P 4 -L 1 bash -c 'case $4 in full) score=x;; causal) score="col > row ? -inf : x";; window) score="col > row || row - col >= 300 ? -inf : x";; esac
  LIMIT=30 point "odd_${0}_${5}_s${1}_d${2}_kv${3}_${4}${6:+_$6}" $1 $2 2 8 $3 "$score" --set "launch.rung=\"$0\"" --set "dtype=\"$5\"" \
    ${6:+--set launch.persistent=true} --set measure.repeat=3 --set measure.warmup=1' > "$OUT/odd.txt" 2>&1
echo "odd shapes failing: $(grep -vc 'exit 0' "$OUT/odd.txt") of $(wc -l < "$OUT/odd.txt")"; grep -v "exit 0" "$OUT/odd.txt" | head -20
echo "== documents: tiles skipped by the sorted ids (attention_documents.json, 4 × 2048 tokens, 8 documents, causal), against the same ids unsorted (causal skipping alone)"
{
for run in sorted_true sorted_false persistent; do  # (the config's ids are sorted)
  case $run in
    sorted_true) opts=();; sorted_false) opts=(--set inputs.doc.sorted=false);; persistent) opts=(--set launch.persistent=true);;
  esac
  timeout 60 "$kjit" run configs/attention_documents.json --skip-ceiling "${opts[@]}" \
    --json "$OUT/logs/documents_$run.json" > "$OUT/logs/documents_$run.txt" 2>&1
  echo "documents $run: exit $? $(grep -E 'TFLOP|PASS|FAIL' "$OUT/logs/documents_$run.txt" | head -2 | tr '\n' ' ')"
done
for seq in 17 1000 4097; do for rung in wgmma mma; do for score in "doc[row] != doc[col] ? -inf : x" "col > row || doc[row] != doc[col] ? -inf : x"; do
  docs="{\"shape\":[2,$seq],\"fill\":\"uniform\",\"low\":0,\"high\":5,\"round\":\"floor\",\"sorted\":true}"
  LIMIT=30 point "documents_${rung}_s${seq}_$([ "${score:0:3}" = col ] && echo causal || echo full)" $seq 128 2 8 2 "$score" \
    --set "inputs.doc=$docs" --set "launch.rung=\"$rung\"" --set measure.repeat=3 --set measure.warmup=1
done; done; done
} 2>&1 | tee "$OUT/documents.txt"
(cd bench/peers && timeout 90 python3 attention_peers.py --repeat 10 --tools flex,cudnn --grid 2048:128 --causal yes --documents 8 \
  --width 2048 --tokens 8192 > "$OUT/peers.jsonl" 2> "$OUT/logs/peers.err"); echo "peers documents: exit $?"
cat "$OUT/peers.jsonl"
echo "== compile cold, then a cache hit"
rm -rf /tmp/kjit-cold && KJIT_CACHE_DIR=/tmp/kjit-cold "$kjit" compile configs/attention_causal.json > "$OUT/logs/compile_cold.txt" 2>&1
grep -E "compile |NVRTC|ptxas|total" "$OUT/logs/compile_cold.txt"
KJIT_CACHE_DIR=/tmp/kjit-cold "$kjit" run configs/attention_causal.json --skip-ceiling > "$OUT/logs/cache_hit.txt" 2>&1
grep -E "compile |cache|module|first launch" "$OUT/logs/cache_hit.txt"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
pack && rm -rf "$OUT/logs"
