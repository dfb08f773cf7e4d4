#!/usr/bin/env bash
# The fourth call of issue 40: the row cases the rule changed at odd lengths (the third call's
# loop had a syntax error and never ran), then every public shape at the final defaults, two
# rounds alternated, with the peers in the same run.
set -uo pipefail
export OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > "$OUT/env.txt"
{ cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/.deps/usr" -DKJIT_PYTHON=OFF &&
  cmake --build build-gpu --target kjit -j "$(nproc)"; } > "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
kjit=$PWD/build-gpu/kjit
export KJIT_CACHE_DIR=/tmp/kjit-cache
for cols in 65537 128256 200001; do
    for dtype in float32 bfloat16; do
        for cfg in softmax layernorm rmsnorm causal_softmax; do
            timeout 60 "$kjit" run "configs/$cfg.json" --set "shape=[7,$cols]" --set dtype=$dtype --set measure.repeat=3 \
                --set measure.max_ms=5 --skip-ceiling >> "$OUT/logs/rows_odd.log" 2>&1 || echo "rows_odd $cfg $cols $dtype: exit $?" >> "$OUT/logs/rows_odd.log"
        done
    done
done
echo "rows odd: $(grep -c 'check    PASS' "$OUT/logs/rows_odd.log") PASS, $(grep -c 'check    FAIL\|: exit' "$OUT/logs/rows_odd.log") FAIL or exit"
grep -o "variant .*" "$OUT/logs/rows_odd.log" | sort | uniq -c | head -12
timeout 400 python3 bench/defaults/run.py "$kjit" "$OUT/logs" --rounds 2
python3 scripts/defaults_table.py "$OUT/logs" | tee "$OUT/defaults_table.md"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
cd "$OUT/logs" && tar czf ../defaults-data.tgz . && cd "$OUT" && rm -rf logs
