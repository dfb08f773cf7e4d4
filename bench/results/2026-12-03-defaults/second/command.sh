#!/usr/bin/env bash
# The second call of issue 40: the public shapes at the defaults of this commit (GEMM's rule by target
# and shape), one round, with the peers; then the row family's launch space tuned exhaustively at
# the row cases the defaults lose (softmax over 128,256 and 50,257 columns, causal 8192²).
set -uo pipefail
export OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > "$OUT/env.txt"
{ cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/.deps/usr" -DKJIT_PYTHON=OFF &&
  cmake --build build-gpu --target kjit -j "$(nproc)"; } > "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
kjit=$PWD/build-gpu/kjit
export KJIT_CACHE_DIR=/tmp/kjit-cache
timeout 330 python3 bench/defaults/run.py "$kjit" "$OUT/logs" --rounds 1
python3 scripts/defaults_table.py "$OUT/logs" | tee "$OUT/defaults_table.md"
for spec in "softmax.json 1024 128256" "softmax.json 1024 50257" "causal_softmax.json 8192 8192"; do
    read -r cfg rows cols <<< "$spec"
    timeout 80 "$kjit" tune "configs/$cfg" --set dtype=bfloat16 --set "shape=[$rows,$cols]" --set measure.max_ms=40 --strategy exhaustive --quiet \
        --json "$OUT/logs/tune_${cfg%.json}_${rows}x$cols.json" > "$OUT/logs/tune_${cfg%.json}_${rows}x$cols.log" 2>&1
    echo "== $cfg $rows x $cols"; grep -E -A6 "fastest|best" "$OUT/logs/tune_${cfg%.json}_${rows}x$cols.log" | head -8
done
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
cd "$OUT/logs" && tar czf ../defaults-data.tgz . && cd "$OUT" && rm -rf logs
