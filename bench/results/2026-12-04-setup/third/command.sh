#!/usr/bin/env bash
# The session's last code on the H200: every GPU test; first-call with the setup phase ending where
# the driver is first asked; the README's fresh `kjit run` again. Then issue 40's long rows: what
# bounds a softmax over 128,256 and 50,257 columns, beside a layer norm (two reductions, no exp) and
# an RMS norm (one reduction, no exp) at the same shapes, with their counters.
set -uo pipefail
export OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > "$OUT/env.txt"
date -u >> "$OUT/env.txt"
{ cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/.deps/usr" -DKJIT_PYTHON=OFF &&
  cmake --build build-gpu --target kjit gpu_tests -j "$(nproc)"; } > "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
kjit=$PWD/build-gpu/kjit
timeout 330 build-gpu/tests/gpu_tests > "$OUT/gpu_tests.txt" 2>&1; echo "gpu_tests exit $?"; tail -3 "$OUT/gpu_tests.txt"
timeout 120 "$kjit" first-call configs/seed_vectorize.json --repeat 5 --json "$OUT/logs/first_call.json" > "$OUT/first_call.txt" 2>&1
echo "first-call exit $?"; tail -6 "$OUT/first_call.txt"
timeout 60 "$kjit" run --cache-dir /tmp/kjit-empty-cache > "$OUT/readme-run.txt" 2>&1; echo "run exit $?"
export KJIT_CACHE_DIR=/tmp/kjit-cache
summary='import json,sys; r=json.load(open(sys.argv[1])); r=r[0] if isinstance(r,list) else r; m={k:v for k,v in r.items() if k.startswith("metric_")}; print(r.get("status"), "cold_us", round(1000*(r.get("kernel_cold_median_ms") or 0),1), "| dram/model", r.get("dram_bytes_over_model"), "|", {k: m[k] for k in sorted(m) if any(w in k for w in ("dram_throughput","sm_throughput","issue","fma","occupancy","stall_long","stall_barrier","stall_math","stall_mio","stall_short"))}, "|", r.get("variant"))'
for cols in 128256 50257; do
  for config in softmax layernorm rmsnorm; do
    name=${config}_$cols
    timeout 90 "$kjit" run configs/$config.json --skip-ceiling --set dtype=bfloat16 --set "shape=[1024,$cols]" --metrics \
      --json "$OUT/logs/$name.json" > "$OUT/logs/$name.txt" 2>&1
    echo "$name: $(python3 -c "$summary" "$OUT/logs/$name.json" 2>/dev/null || tail -2 "$OUT/logs/$name.txt")"
  done
done | tee "$OUT/long_rows.txt"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
cd "$OUT/logs" && tar czf ../data.tgz . && cd "$OUT" && rm -rf logs
