#!/usr/bin/env bash
# Issue 40: the defaults against what `kjit tune` finds (anneal, up to 40 points or 90 s of the wgmma space:
# tiles, schedules, clusters, splits, buffers, groups) at a decode step, GPT-2's down-projection and
# a 256-token product, and (the row family's space) the 50,257-column softmax; then each default.
set -uo pipefail
export OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > "$OUT/env.txt"
{ cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/.deps/usr" -DKJIT_PYTHON=OFF &&
  cmake --build build-gpu --target kjit -j "$(nproc)"; } > "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
kjit=$PWD/build-gpu/kjit
export KJIT_CACHE_DIR=/tmp/kjit-cache
gemm=(--set dtype=bfloat16 --set 'stages=[{"op":"matmul","input":"x_in","by":"W"},{"op":"bias","by":"b"}]' --set measure.repeat=20 --set measure.max_ms=200)
# The tune's fastest point (by its own statistic), as --set lines, to run it as the default runs.
best_sets() {
    python3 - "$1" <<'PY'
import json, sys
recs = [r for r in json.load(open(sys.argv[1])) if r.get("status") == "PASS" and r.get("ms")]
best = min(recs, key=lambda r: r["ms"])
print("\n".join(f"{k}={json.dumps(v)}" for k, v in best["values"].items()))
PY
}
# case config args...: tune, then the default and the tune's best, two rounds alternated
compare() {
    local case=$1 cfg=$2; shift 2
    timeout 110 "$kjit" tune "$cfg" "$@" --strategy anneal --budget 40 --seconds 90 \
        --json "$OUT/logs/tune_$case.json" > "$OUT/logs/tune_$case.log" 2>&1; echo "tune $case: exit $?"
    local sets=()
    while IFS= read -r line; do sets+=(--set "$line"); done < <(best_sets "$OUT/logs/tune_$case.json")
    for round in 1 2; do
        "$kjit" run "$cfg" "$@" --skip-ceiling --json "$OUT/logs/default_${case}_$round.json" >> "$OUT/logs/default_$case.log" 2>&1
        "$kjit" run "$cfg" "$@" "${sets[@]}" --skip-ceiling --json "$OUT/logs/best_${case}_$round.json" >> "$OUT/logs/best_$case.log" 2>&1
    done
}
for mnk in 16x4096x4096 4096x768x3072 256x4096x4096; do
    IFS=x read -r m n k <<< "$mnk"
    compare "$mnk" configs/mlp_layer.json "${gemm[@]}" --set "shape=[$m,$k]" --set "inputs.W.shape=[$k,$n]"
done
compare softmax50257 configs/softmax.json --set 'shape=[1024,50257]' --set dtype=bfloat16
python3 - "$OUT/logs" <<'PY' | tee "$OUT/table.txt"
import glob, json, os, statistics, sys
d = sys.argv[1]
for f in sorted(glob.glob(os.path.join(d, "tune_*.json"))):
    case = os.path.basename(f)[5:-5]
    runs = lambda kind: [json.load(open(g))[0] for g in sorted(glob.glob(os.path.join(d, f"{kind}_{case}_*.json")))]
    dflt, best = runs("default"), runs("best")
    t = statistics.median(r["kernel_cold_median_ms"] * 1000 for r in dflt)
    b = statistics.median(r["kernel_cold_median_ms"] * 1000 for r in best)
    points = sum(1 for r in json.load(open(f)) if r.get("status") == "PASS")
    print(f"{case:18s} default {t:7.1f} us   tune's best ({points} points passed) {b:7.1f} us   default/best {t / b:.3f}")
    print(f"    default: {dflt[0].get('variant', '')}")
    print(f"    best:    {best[0].get('variant', '')}")
PY
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
cd "$OUT/logs" && tar czf ../data.tgz . && cd "$OUT" && rm -rf logs
