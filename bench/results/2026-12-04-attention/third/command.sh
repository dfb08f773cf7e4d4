#!/usr/bin/env bash
# Issue 43, the attention family's third call: the mma rung at its defaults (4 warps of 2 pieces, tiles
# of 64 keys) at the FlashAttention-3 grid (16,384 tokens, heads × head dim = 2,048), causal and
# not, beside PyTorch's SDPA backends, FlexAttention and eager in the same run; verification at
# odd shapes again, head dim 256 among them.
set -uo pipefail
export OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > "$OUT/env.txt"
{ cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/.deps/usr" -DKJIT_PYTHON=OFF &&
  cmake --build build-gpu --target kjit -j "$(nproc)"; } > "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
kjit=$PWD/build-gpu/kjit
export KJIT_CACHE_DIR=/tmp/kjit-cache
# point NAME SEQ DIM BATCH HEADS KV_HEADS SCORE [more --set]: kjit at that point, a JSON record
point() {
  local name=$1 seq=$2 dim=$3 batch=$4 heads=$5 kv=$6 score=$7; shift 7
  local rows=$((batch * heads * seq)) kv_rows=$((batch * kv * seq))
  timeout 120 "$kjit" run configs/attention.json --skip-ceiling --set "shape=[$rows,$dim]" \
    --set "inputs.k.shape=[$kv_rows,$dim]" --set "inputs.v.shape=[$kv_rows,$dim]" \
    --set "stages[0].batch=$batch" --set "stages[0].heads=$heads" --set "stages[0].kv_heads=$kv" \
    --set "stages[0].score=\"$score\"" "$@" --json "$OUT/logs/$name.json" > "$OUT/logs/$name.txt" 2>&1
  local rc=$?
  echo "$name: exit $rc $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); r=r[0] if isinstance(r,list) else r; print(r.get("status"), "mismatches", r.get("mismatches"), "of", r.get("compared"), "cold_ms", r.get("kernel_cold_median_ms"), "tflops", round(r.get("tflops") or 0), "regs", r.get("registers"), "first_bad", r.get("first_bad"), r.get("error") or "")' "$OUT/logs/$name.json" 2>/dev/null || tail -2 "$OUT/logs/$name.txt")"
}
echo "== odd shapes (verification)"
for seq in 1 17 1000 4097; do for dim in 64 96 128 256; do for kv in 8 2 1; do
  for score in x "col > row ? -inf : x"; do
    tag=$([ "$score" = x ] && echo full || echo causal)
    point "odd_s${seq}_d${dim}_kv${kv}_${tag}" $seq $dim 2 8 $kv "$score" --set measure.repeat=3 --set measure.warmup=1
  done; done; done; done 2>&1 | tee "$OUT/odd.txt" | grep -v "exit 0" | head -40
echo "odd shapes failing: $(grep -vc 'exit 0' "$OUT/odd.txt") of $(wc -l < "$OUT/odd.txt")"
echo "== the grid, at the defaults"
for p in 1024:128 2048:128 4096:128 8192:128 16384:128 1024:64 4096:64 16384:64; do
  seq=${p%:*}; dim=${p#*:}; batch=$((16384 / seq)); heads=$((2048 / dim))
  point "grid_s${seq}_d${dim}_full" $seq $dim $batch $heads $heads x
  point "grid_s${seq}_d${dim}_causal" $seq $dim $batch $heads $heads "col > row ? -inf : x"
done 2>&1 | tee "$OUT/grid.txt"
echo "== score modifiers at 8192:128"
point mod_window 8192 128 2 16 16 "col > row || row - col >= 1024 ? -inf : x"
point mod_softcap 8192 128 2 16 16 "30 * tanh(x / 30)"
point grid_s4096_d256_full 4096 256 4 8 8 x
echo "== peers"
(cd bench/peers && timeout 400 python3 attention_peers.py --repeat 10) > "$OUT/peers.jsonl" 2> "$OUT/logs/peers.err"
echo "peers: exit $?"; tail -3 "$OUT/logs/peers.err"
python3 - "$OUT" <<'PY'
import json, sys, glob, os
out = sys.argv[1]
rows = {}
for f in sorted(glob.glob(f"{out}/logs/grid_*.json")):
    r = json.load(open(f)); r = r[0] if isinstance(r, list) else r
    rows[os.path.basename(f)[5:-5]] = r
for k, r in rows.items():
    print("kjit", k, round(r.get("tflops") or 0), r.get("status"), r.get("kernel_cold_median_ms"))
for line in open(f"{out}/peers.jsonl"):
    p = json.loads(line)
    print(p["seq"], p["head_dim"], "causal" if p["causal"] else "full", p["tool"], round(p.get("tflops", 0)), p.get("first_call_s", ""), p.get("error", ""))
PY
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
cd "$OUT/logs" && tar czf ../data.tgz . && cd "$OUT" && rm -rf logs
