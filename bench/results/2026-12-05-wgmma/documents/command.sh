#!/usr/bin/env bash
# Issue 43, a short call on main (the device time left after refused starts): document masks
# whose tiles the sorted ids skip, verified at odd shapes on both rungs (four at a time:
# verification, not timing), and attention_documents.json (4 × 2048 tokens, 16 heads over 4,
# 8 documents, causal) timed with its ids sorted and not.
source bench/attention_call.sh
echo "== document masks at odd shapes"
for seq in 1 17 1000 4097; do for rung in wgmma mma; do for tag in documents causal_documents; do echo "$rung $seq $tag"; done; done; done |
  xargs -P 4 -L 1 bash -c 'case $2 in documents) score="doc[row] != doc[col] ? -inf : x";; causal_documents) score="col > row || doc[row] != doc[col] ? -inf : x";; esac
  docs="{\"shape\":[2,$1],\"fill\":\"uniform\",\"low\":0,\"high\":5,\"round\":\"floor\",\"sorted\":true}"
  LIMIT=30 point "odd_${0}_s${1}_${2}" $1 128 2 8 2 "$score" --set "launch.rung=\"$0\"" --set "inputs.doc=$docs" --set measure.repeat=3 --set measure.warmup=1' > "$OUT/odd.txt" 2>&1
echo "odd shapes failing: $(grep -vc 'exit 0' "$OUT/odd.txt") of $(wc -l < "$OUT/odd.txt")"; grep -v "exit 0" "$OUT/odd.txt" | head -20
pack
echo "== attention_documents.json, ids sorted and not"
for sorted in true false; do
  timeout 60 "$kjit" run configs/attention_documents.json --skip-ceiling --set "inputs.doc.sorted=$sorted" \
    --json "$OUT/logs/documents_sorted_$sorted.json" > "$OUT/logs/documents_sorted_$sorted.txt" 2>&1
  echo "documents sorted=$sorted: exit $? $(grep -E 'TFLOP|PASS|FAIL' "$OUT/logs/documents_sorted_$sorted.txt" | head -2 | tr '\n' ' ')"
done 2>&1 | tee "$OUT/documents.txt"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
pack && rm -rf "$OUT/logs"
