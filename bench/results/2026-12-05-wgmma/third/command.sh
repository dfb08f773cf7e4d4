#!/usr/bin/env bash
# Issue 43, the attention family's wgmma rung, third call: the three schedules ("serial", the
# default so far; "overlap", the softmax of tile n while P · V of tile n − 1 and S of tile n + 1
# run; "pingpong", the consumers taking turns as well) at the FlashAttention-3 grid, beside
# cuDNN and FlashAttention-2 in the same call; three consumers at head dim 64; then the odd shapes
# verified on each new schedule (four at a time: verification, not timing).
set -uo pipefail
export OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > "$OUT/env.txt"
{ cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/.deps/usr" -DKJIT_PYTHON=OFF &&
  cmake --build build-gpu --target kjit -j "$(nproc)"; } > "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
export kjit=$PWD/build-gpu/kjit
export KJIT_CACHE_DIR=/tmp/kjit-cache
# point NAME SEQ DIM BATCH HEADS KV_HEADS SCORE [more --set]: kjit at that point, a JSON record
point() {
  local name=$1 seq=$2 dim=$3 batch=$4 heads=$5 kv=$6 score=$7; shift 7
  local rows=$((batch * heads * seq)) kv_rows=$((batch * kv * seq))
  timeout ${LIMIT:-40} "$kjit" run configs/attention.json --skip-ceiling --set "shape=[$rows,$dim]" \
    --set "inputs.k.shape=[$kv_rows,$dim]" --set "inputs.v.shape=[$kv_rows,$dim]" \
    --set "stages[0].batch=$batch" --set "stages[0].heads=$heads" --set "stages[0].kv_heads=$kv" \
    --set "stages[0].score=\"$score\"" "$@" --json "$OUT/logs/$name.json" > "$OUT/logs/$name.txt" 2>&1
  local rc=$?
  echo "$name: exit $rc $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); r=r[0] if isinstance(r,list) else r; print(r.get("status"), "mismatches", r.get("mismatches"), "of", r.get("compared"), "cold_ms", r.get("kernel_cold_median_ms"), "tflops", round(r.get("tflops") or 0), "regs", r.get("registers"), "first_bad", r.get("first_bad"), r.get("error") or "")' "$OUT/logs/$name.json" 2>/dev/null || tail -3 "$OUT/logs/$name.txt")"
  return $rc
}
export -f point
causal="col > row ? -inf : x"
echo "== smoke (each schedule; a schedule that fails or hangs is left out below)"
schedules=""
for s in serial overlap pingpong; do
  ok=1
  for dim in 128 64; do
    LIMIT=15 point "smoke_${s}_d$dim" 1000 $dim 2 8 2 x --set "launch.schedule=\"$s\"" --set measure.repeat=3 --set measure.warmup=1 || ok=0
    LIMIT=15 point "smoke_${s}_d${dim}_causal" 1000 $dim 2 8 2 "$causal" --set "launch.schedule=\"$s\"" --set measure.repeat=3 --set measure.warmup=1 || ok=0
  done
  [ $ok = 1 ] && schedules="$schedules $s"
done 2>&1 | tee "$OUT/smoke.txt"
schedules=$(for s in serial overlap pingpong; do grep -q "^smoke_${s}_.*exit [^0]" "$OUT/smoke.txt" || echo $s; done | tr '\n' ' ')
echo "schedules that ran: $schedules"
echo "== the grid, each schedule"
for p in 1024:128 2048:128 4096:128 8192:128 16384:128 1024:64 4096:64 16384:64; do
  seq=${p%:*}; dim=${p#*:}; batch=$((16384 / seq)); heads=$((2048 / dim))
  for s in $schedules; do
    point "grid_${s}_s${seq}_d${dim}_full" $seq $dim $batch $heads $heads x --set "launch.schedule=\"$s\""
    point "grid_${s}_s${seq}_d${dim}_causal" $seq $dim $batch $heads $heads "$causal" --set "launch.schedule=\"$s\""
    if [ $dim = 64 ] && [ $s != serial ]; then
      point "three_${s}_s${seq}_d${dim}_full" $seq $dim $batch $heads $heads x --set "launch.schedule=\"$s\"" --set launch.consumers=3
      point "three_${s}_s${seq}_d${dim}_causal" $seq $dim $batch $heads $heads "$causal" --set "launch.schedule=\"$s\"" --set launch.consumers=3
    fi
  done
done 2>&1 | tee "$OUT/grid.txt"
for s in $schedules; do point "grid_${s}_s4096_d256_full" 4096 256 4 8 8 x --set "launch.schedule=\"$s\""; done | tee -a "$OUT/grid.txt"
for s in $schedules; do for bn in 64 176; do
  point "tile${bn}_${s}_s8192_d128_full" 8192 128 2 16 16 x --set "launch.schedule=\"$s\"" --set launch.block_n=$bn
done; point "buffers3_${s}_s8192_d128_full" 8192 128 2 16 16 x --set "launch.schedule=\"$s\"" --set launch.buffers=3; done | tee "$OUT/launches.txt"
(cd "$OUT/logs" && tar czf ../data.tgz .)
echo "== peers, the same grid"
(cd bench/peers && timeout 240 python3 attention_peers.py --repeat 10 --tools cudnn,flash > "$OUT/peers.jsonl" 2> "$OUT/logs/peers.err"; echo "peers: exit $?")
python3 - "$OUT/peers.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    p = json.loads(line)
    print(p["seq"], p["head_dim"], "causal" if p["causal"] else "full", p["tool"], round(p.get("tflops", 0)), p.get("median_ms"), p.get("error", ""))
PY
(cd "$OUT/logs" && tar czf ../data.tgz .)
echo "== odd shapes (verification), the new schedules, four at a time"
for s in $schedules; do [ $s = serial ] && continue
  for seq in 1 17 1000 4097; do for dim in 64 96 128; do for kv in 8 2 1; do for tag in full causal; do
    echo "$s $seq $dim $kv $tag"
  done; done; done; done
done | xargs -P 4 -L 1 bash -c 'score=x; [ $4 = causal ] && score="col > row ? -inf : x"; LIMIT=30 point "odd_${0}_s${1}_d${2}_kv${3}_${4}" $1 $2 2 8 $3 "$score" --set "launch.schedule=\"$0\"" --set measure.repeat=3 --set measure.warmup=1' > "$OUT/odd.txt" 2>&1
echo "odd shapes failing: $(grep -vc 'exit 0' "$OUT/odd.txt") of $(wc -l < "$OUT/odd.txt")"; grep -v "exit 0" "$OUT/odd.txt" | head -20
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
(cd "$OUT/logs" && tar czf ../data.tgz .) && rm -rf "$OUT/logs"
