#!/usr/bin/env bash
# Issue 43, fourth call (the same warm H100 as the third, right after it): three and four buffers
# with the overlapped schedules, and three consumers at head dim 64, at the grid; other head dims.
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
echo "== buffers with the overlapped schedules"
for p in 1024:128 2048:128 4096:128 8192:128 16384:128 1024:64 4096:64 16384:64; do
  seq=${p%:*}; dim=${p#*:}; batch=$((16384 / seq)); heads=$((2048 / dim))
  for s in overlap pingpong; do for b in 3 4; do for c in 2 3; do
    [ $dim = 128 ] && { [ $b = 4 ] || [ $c = 3 ]; } && continue
    for tag in full causal; do score=x; [ $tag = causal ] && score=$causal
      point "b${b}_c${c}_${s}_s${seq}_d${dim}_${tag}" $seq $dim $batch $heads $heads "$score" --set "launch.schedule=\"$s\"" --set launch.buffers=$b --set launch.consumers=$c
    done
  done; done; done
done 2>&1 | tee "$OUT/grid.txt"
for p in 4096:96 4096:160 4096:256; do
  seq=${p%:*}; dim=${p#*:}; batch=4; heads=$((2048 / dim))
  for s in serial pingpong; do for b in 2 3; do
    point "b${b}_${s}_s${seq}_d${dim}_full" $seq $dim $batch $heads $heads x --set "launch.schedule=\"$s\"" --set launch.buffers=$b || true
  done; done
done 2>&1 | tee -a "$OUT/grid.txt"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
(cd "$OUT/logs" && tar czf ../data.tgz .) && rm -rf "$OUT/logs"
