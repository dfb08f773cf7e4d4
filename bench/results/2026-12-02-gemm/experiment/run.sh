#!/usr/bin/env bash
# The mma rung with its copies addressed from one pointer per matrix (templates/, a copy of
# kernel_templates/gemm_mma.cu.mustache with that change) against the shipped template: the matmul
# alone at 4096³ and 8192³, auto launch, 3 alternated rounds; then the experiment's template
# verified at M, N, K of 1, 17, 1000, 4097 (all 64 combinations, bfloat16, fused).
# usage: run.sh KJIT OUT
set -uo pipefail
kjit=$1 out=$2
here=$(dirname "$0")
mkdir -p "$out/exp"
alone='stages=[{"op":"matmul","input":"x_in","by":"W"}]'
for round in 1 2 3; do
    for s in 4096 8192; do
        for t in base exp; do
            extra=(); [ $t = exp ] && extra=(--templates "$here/templates")
            "$kjit" run configs/mlp_layer.json --set "shape=[$s,$s]" --set "inputs.W.shape=[$s,$s]" --set "$alone" \
                --skip-ceiling "${extra[@]}" --json "$out/exp/$s.$t.$round.json" > /dev/null 2>> "$out/exp.log"
        done
    done
done
python3 - "$out/exp" <<'PY'
import glob, json, statistics, sys
for s in (4096, 8192):
    for t in ("base", "exp"):
        ms = [json.load(open(f))[0]["kernel_cold_median_ms"] for f in glob.glob(f"{sys.argv[1]}/{s}.{t}.*.json")]
        regs = json.load(open(glob.glob(f"{sys.argv[1]}/{s}.{t}.*.json")[0]))[0]["registers"]
        print(f"{s}³ {t}: median {statistics.median(ms):.4f} ms over {len(ms)} rounds ({', '.join(f'{m:.4f}' for m in ms)}), {regs} registers, {2 * s**3 / (statistics.median(ms) * 1e-3) / 1e12:.1f} TFLOP/s")
PY
passed=0 total=0
for m in 1 17 1000 4097; do for n in 1 17 1000 4097; do for k in 1 17 1000 4097; do
    total=$((total + 1))
    "$kjit" run configs/mlp_layer.json --templates "$here/templates" --set "shape=[$m,$k]" --set "inputs.W.shape=[$k,$n]" \
        --set measure.repeat=3 --set measure.max_ms=5 --set measure.warmup=1 --skip-ceiling > "$out/exp/odd.log" 2>&1 && passed=$((passed + 1)) || tail -3 "$out/exp/odd.log" >> "$out/exp.log"
done; done; done
echo "experiment template at odd shapes: $passed of $total PASS"
