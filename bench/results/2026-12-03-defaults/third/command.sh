#!/usr/bin/env bash
# The third call of issue 40: the whole build and every test label on the H200 (gpu included),
# then the GEMM family at odd shapes with every launch left to the new rules (M, N ∈ {1, 17, 1000,
# 4097}, K ∈ {17, 4096}; bfloat16 and float16, fused and separate: wgmma where TMA copies the
# rows, mma elsewhere, tiles by shape; as many as the call's time allows) and the row cases the
# rule changed at odd lengths.
set -uo pipefail
export OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > "$OUT/env.txt"
OUT=$OUT/logs bash scripts/gpu-check.sh build > "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
OUT=$OUT/logs timeout 260 bash scripts/gpu-check.sh tests
kjit=$PWD/build-gpu/kjit
export KJIT_CACHE_DIR=/tmp/kjit-cache
mkdir -p "$OUT/logs/odd"
for m in 1 17 1000 4097; do for n in 1 17 1000 4097; do for k in 17 4096; do
    [ $SECONDS -gt 470 ] && { echo "odd $m x $n x $k: not run, the call's time is spent" >> "$OUT/logs/gemm_odd.log"; continue; }
    timeout 60 "$kjit" sweep configs/mlp_layer.json --set "shape=[$m,$k]" --set "inputs.W.shape=[$k,$n]" --set measure.repeat=3 \
        --set measure.max_ms=5 --set measure.warmup=1 --quiet --set 'sweep={"dtype":["bfloat16","float16"],"fusion":["fused","separate"]}' \
        --json "$OUT/logs/odd/${m}x${n}x${k}.json" >> "$OUT/logs/gemm_odd.log" 2>&1
done; done; done
for cols in 65537 128256 200001; do
    [ $SECONDS -gt 540 ] && break for dtype in float32 bfloat16; do
    for cfg in softmax layernorm rmsnorm causal_softmax; do
        timeout 60 "$kjit" run "configs/$cfg.json" --set "shape=[7,$cols]" --set dtype=$dtype --set measure.repeat=3 --set measure.max_ms=5 \
            --skip-ceiling >> "$OUT/logs/rows_odd.log" 2>&1 || echo "rows_odd $cfg $cols $dtype: exit $?" >> "$OUT/logs/rows_odd.log"
    done
done; done
python3 - "$OUT/logs" <<'PY'
import json, glob, sys, collections
count = collections.Counter()
for f in glob.glob(sys.argv[1] + "/odd/*.json"):
    for r in json.load(open(f)):
        count[(r["status"], r.get("policy_rung"))] += 1
print("gemm odd shapes (status, rung):", dict(count))
PY
echo "rows odd: $(grep -c ' PASS' "$OUT/logs/rows_odd.log") PASS, $(grep -c 'FAIL\|exit' "$OUT/logs/rows_odd.log") FAIL or exit"
grep -E "FAIL|exit" "$OUT/logs/rows_odd.log" | head -5
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
cd "$OUT/logs" && tar czf ../tests-data.tgz . && cd "$OUT" && rm -rf logs
