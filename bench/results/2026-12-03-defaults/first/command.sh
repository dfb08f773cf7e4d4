#!/usr/bin/env bash
# The first call of issue 40 (right by default): data for the wgmma shape rule. Build; at each
# public shape (the MLP products of LLaMA-2-7B and GPT-2 small at 4096 and 8192 tokens, decode at
# M = 1, 16, 64) the product alone tuned exhaustively over eight wgmma tiles × two pipeline depths;
# the GEMM peers at the same shapes; the row cases at the defaults beside their peers.
set -uo pipefail
export OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > "$OUT/env.txt"
{ cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/.deps/usr" -DKJIT_PYTHON=OFF &&
  cmake --build build-gpu --target kjit -j "$(nproc)"; } > "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
kjit=$PWD/build-gpu/kjit
export KJIT_CACHE_DIR=/tmp/kjit-cache
shapes="4096x11008x4096 4096x4096x11008 4096x3072x768 8192x3072x768 4096x768x3072 1x4096x4096 16x4096x4096 64x4096x4096"
tiles='{"axes":{"launch.stages":[3,4]},"paired":[{"launch.tile_m":[128,128,128,64,64,64,256,128],"launch.tile_n":[256,128,128,256,128,64,128,64],"launch.schedule":["cooperative","cooperative","pingpong","pingpong","pingpong","pingpong","cooperative","cooperative"]}]}'
for shape in $shapes; do
    IFS=x read -r m n k <<< "$shape"
    timeout 150 "$kjit" tune configs/mlp_layer.json --set "shape=[$m,$k]" --set "inputs.W.shape=[$k,$n]" \
        --set 'stages=[{"op":"matmul","input":"x_in","by":"W"}]' --set launch.rung=wgmma \
        --set measure.max_ms=60 --set "tune=$tiles" --strategy exhaustive --quiet \
        --json "$OUT/logs/tune_$shape.json" > "$OUT/logs/tune_$shape.log" 2>&1
    echo "== $shape"; grep -E "best|fastest" "$OUT/logs/tune_$shape.log" | head -3
done
python3 bench/peers/gemm_peers.py --shapes "$(echo $shapes | tr ' ' ,)" --compile-mode default --no-fp32 --repeat 20 \
    > "$OUT/gemm_peers.jsonl" 2> "$OUT/logs/gemm_peers.err"
python3 - "$OUT" <<'PY'
import json, sys, glob, os
out = sys.argv[1]
peers = {}
for line in open(f"{out}/gemm_peers.jsonl"):
    r = json.loads(line)
    if "median_ms" in r: peers[(r["m"], r["n"], r["k"], r["tool"])] = r["median_ms"]
for f in sorted(glob.glob(f"{out}/logs/tune_*.json")):
    shape = os.path.basename(f)[5:-5]; m, n, k = (int(v) for v in shape.split("x"))
    rows = json.load(open(f))
    cub = peers.get((m, n, k, "cublas"))
    print(f"## {shape}  cublas {cub}")
    for r in sorted(rows, key=lambda r: r["ms"] or 1e9):
        ratio = f"{cub / r['ms']:.3f}" if cub and r["ms"] else "-"
        print(f"  {r['point']:70s} {r['ms']}  {r['status']}  cublas/kjit {ratio}")
PY
PY_ROWS="1024x32000,1024x50257,1024x128256,4096x768,4096x4096,8192x8192"
for spec in "softmax.json 1024 32000" "softmax.json 1024 50257" "softmax.json 1024 128256" "softmax.json 8192 8192" "causal_softmax.json 8192 8192" \
            "layernorm.json 4096 768" "layernorm.json 4096 4096" "rmsnorm.json 4096 768" "rmsnorm.json 4096 4096"; do
    read -r cfg rows cols <<< "$spec"
    timeout 60 "$kjit" run "configs/$cfg" --set dtype=bfloat16 --set "shape=[$rows,$cols]" --json "$OUT/logs/rows_${cfg%.json}_${rows}x$cols.json" \
        > "$OUT/logs/rows_${cfg%.json}_${rows}x$cols.log" 2>&1
    echo "== $cfg $rows x $cols: $(grep -E 'cold|copy' "$OUT/logs/rows_${cfg%.json}_${rows}x$cols.log" | head -2 | tr -s ' ' | tr '\n' ' ')"
done
python3 bench/peers/row_peers.py --shapes "$PY_ROWS" --dtypes bfloat16 --ops softmax,layernorm,rmsnorm,causal_softmax \
    > "$OUT/row_peers.jsonl" 2> "$OUT/logs/row_peers.err"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
cd "$OUT/logs" && tar czf ../data.tgz . && cd "$OUT" && rm -rf logs
