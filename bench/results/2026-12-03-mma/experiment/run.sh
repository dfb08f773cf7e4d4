#!/usr/bin/env bash
# The mma rung's main loop four ways, the matmul alone, bfloat16, auto launch: the shipped template
# (base); the first step's operands read before the copies are issued (ldfirst); that with the
# steady state's loop free of branches, so that the copies interleave with the multiplies (steady);
# and that with an mbarrier per buffer for "landed" and "read" instead of the block's barrier, the
# refill issued after the first step's multiplies (mbar). Each experiment directory holds its
# gemm_mma.cu.mustache; the other templates are the shipped ones. 8192³ and 4096³, 3 alternated
# rounds; then steady and mbar tuned at 8192³ and verified at M, N, K of 1, 17, 1000, 4097 (all 64
# combinations); ncu's warp-state and scheduler sections for base, steady and mbar at 8192³.
# usage: run.sh KJIT OUT
set -uo pipefail
kjit=$1 out=$2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out/exp"
alone='stages=[{"op":"matmul","input":"x_in","by":"W"}]'
templates() {  # templates NAME: a directory with the shipped templates and NAME's gemm_mma
    local dir=/tmp/templates-$1
    rm -rf "$dir"; mkdir -p "$dir"; cp kernel_templates/*.mustache "$dir/"
    [ "$1" = base ] || cp "$here/$1/gemm_mma.cu.mustache" "$dir/"
    echo "$dir"
}
variants="base ldfirst steady mbar"
for round in 1 2 3; do
    for s in 8192 4096; do
        for t in $variants; do
            "$kjit" run configs/mlp_layer.json --set "shape=[$s,$s]" --set "inputs.W.shape=[$s,$s]" --set "$alone" \
                --skip-ceiling --templates "$(templates $t)" --json "$out/exp/$s.$t.$round.json" >> "$out/exp.log" 2>&1
        done
    done
done
python3 - "$out/exp" $variants <<'PY'
import glob, json, statistics, sys
for s in (8192, 4096):
    for t in sys.argv[2:]:
        runs = [json.load(open(f))[0] for f in sorted(glob.glob(f"{sys.argv[1]}/{s}.{t}.*.json"))]
        ms = [r["kernel_cold_median_ms"] for r in runs]
        print(f"{s}³ {t}: median {statistics.median(ms):.4f} ms ({', '.join(f'{m:.4f}' for m in ms)}), "
              f"{runs[0]['registers']} registers, {2 * s**3 / (statistics.median(ms) * 1e-3) / 1e12:.1f} TFLOP/s, "
              f"{' '.join(r['status'] for r in runs)}")
PY
for t in steady mbar; do
    "$kjit" tune configs/mlp_layer.json --templates "$(templates $t)" --set "shape=[8192,8192]" --set "inputs.W.shape=[8192,8192]" \
        --set "$alone" --set measure.max_ms=100 \
        --set 'tune={"axes":{"launch.tile_k":[32,64],"launch.stages":[3,4],"launch.warps_n":[2,4]}}' \
        --strategy exhaustive --json "$out/exp/tune.$t.json" > "$out/exp/tune.$t.log" 2>&1
    echo "$t tuned:"; grep -A8 "best " "$out/exp/tune.$t.log"
done
for t in steady mbar; do
    passed=0 total=0
    for m in 1 17 1000 4097; do for n in 1 17 1000 4097; do for k in 1 17 1000 4097; do
        total=$((total + 1))
        "$kjit" run configs/mlp_layer.json --templates "$(templates $t)" --set "shape=[$m,$k]" --set "inputs.W.shape=[$k,$n]" \
            --set measure.repeat=3 --set measure.max_ms=5 --set measure.warmup=1 --skip-ceiling > "$out/exp/odd.log" 2>&1 &&
            passed=$((passed + 1)) || tail -3 "$out/exp/odd.log" >> "$out/exp.log"
    done; done; done
    echo "$t template at odd shapes: $passed of $total PASS"
done
for t in base steady mbar; do
    timeout 90 ncu --clock-control none -k mlp_layer_matmul -s 2 -c 1 --section SpeedOfLight --section WarpStateStats \
        --section SchedulerStats --section Occupancy --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
        "$kjit" run configs/mlp_layer.json --set "shape=[8192,8192]" --set "inputs.W.shape=[8192,8192]" --set "$alone" \
        --set measure.repeat=3 --set measure.warmup=1 --skip-ceiling --templates "$(templates $t)" > "$out/exp/ncu.$t.txt" 2>&1
    grep -E "Stall|Issued|Eligible|Active Warps|Throughput|Warp Cycles|No Eligible" "$out/exp/ncu.$t.txt" | head -40
done
