#!/usr/bin/env bash
# The defaults' benchmark (bench/defaults/run.py) at the vocabularies whose launch the cluster
# rows' rule changed (128,256 of cases.json; 151,936 and 256,000 of other_models.json), two
# rounds, with PyTorch eager, torch.compile and a same-size copy in the same call.
set -uo pipefail
source bench/attention_call.sh
timeout 240 python3 bench/defaults/run.py "$kjit" "$OUT/logs/defaults-run" --only softmax_128256 --rounds 2 \
  > "$OUT/logs/defaults.txt" 2>&1
echo "defaults: exit $?"
pack
timeout 240 python3 bench/defaults/run.py "$kjit" "$OUT/logs/defaults-other" --cases bench/defaults/other_models.json \
  --only softmax_151936,softmax_256000 --rounds 2 > "$OUT/logs/defaults-other.txt" 2>&1
echo "defaults other: exit $?"
python3 scripts/defaults_table.py "$OUT/logs/defaults-run" --only rows > "$OUT/table.md" 2>&1
python3 scripts/defaults_table.py "$OUT/logs/defaults-other" --cases bench/defaults/other_models.json --only rows >> "$OUT/table.md" 2>&1
cat "$OUT/table.md"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
pack
