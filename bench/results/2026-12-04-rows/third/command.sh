#!/usr/bin/env bash
# Issue 40, rows, third call: why the causal softmax fails separate (at rows that start inside a
# vector and at aligned ones, each record's first bad element); rows of 50,257 in blocks of 512
# at widths 8 and 1; then every row case of bench/defaults at the new defaults (two rows an SM in
# shared memory) with the peers, two rounds.
set -uo pipefail
export OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > "$OUT/env.txt"
{ cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/.deps/usr" -DKJIT_PYTHON=OFF &&
  cmake --build build-gpu --target kjit -j "$(nproc)"; } > "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
kjit=$PWD/build-gpu/kjit
export KJIT_CACHE_DIR=/tmp/kjit-cache
summary='import json,sys; r=json.load(open(sys.argv[1])); r=r[0] if isinstance(r,list) else r; print(r.get("status"), "cold_us", round(1000*(r.get("kernel_cold_median_ms") or 0),1), "mismatches", r.get("mismatches"), "first_bad", r.get("first_bad"), "|", r.get("variant"), r.get("message") or "")'
run() {
  local name=$1 config=$2; shift 2
  timeout 60 "$kjit" run "configs/$config" --skip-ceiling "$@" --json "$OUT/logs/$name.json" > "$OUT/logs/$name.txt" 2>&1
  echo "$name: exit $? $(python3 -c "$summary" "$OUT/logs/$name.json" 2>/dev/null || tail -2 "$OUT/logs/$name.txt")"
}
echo "== the causal softmax, separate"
for shape in '[3,33]' '[3,32]' '[64,4096]'; do for dtype in float32 bfloat16; do
  run "causal_sep_${shape//[^0-9]/_}_$dtype" causal_softmax.json --set fusion='"separate"' --set "shape=$shape" --set dtype=$dtype --set measure.repeat=3
  run "causal_sep_none_${shape//[^0-9]/_}_$dtype" causal_softmax.json --set fusion='"separate"' --set "shape=$shape" --set dtype=$dtype --set measure.repeat=3 --set launch.row_cache='"none"'
done; done 2>&1 | tee "$OUT/causal_separate.txt"
grep -m1 -B2 -A25 "FAIL\|mismatch" "$OUT/logs/causal_sep__3_33__float32.txt" | head -40
echo "== 50257 in blocks of 512"
for round in 1 2; do
  run "r${round}_50257_default" softmax.json --set dtype=bfloat16 --set 'shape=[1024,50257]'
  run "r${round}_50257_width1" softmax.json --set dtype=bfloat16 --set 'shape=[1024,50257]' --set launch.vector_width=1
done 2>&1 | tee "$OUT/launches.txt"
echo "== defaults, rows"
timeout 300 python3 bench/defaults/run.py "$kjit" "$OUT/logs" --rounds 2 \
  --only softmax_32000,softmax_50257,softmax_128256,softmax_8192,causal_softmax_8192,layernorm_768,layernorm_4096,rmsnorm_768,rmsnorm_4096
python3 scripts/defaults_table.py "$OUT/logs" | grep -v " - | - " | tee "$OUT/defaults_table.md"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
cd "$OUT/logs" && tar czf ../data.tgz . && cd "$OUT" && rm -rf logs
