#!/usr/bin/env bash
# Issue 44's last gaps on the H200: the tensor ceiling from kjit's tensor probe (wgmma with no
# memory traffic) beside the GEMM that used to stand for it; the counter pass with CUPTI's user
# replay and a clean L2 flush before each pass (every shipped config's DRAM bytes against kjit's
# model, as in 2026-12-04-why/first); the timed figures with the counter pass on and off; and
# counters per point in `kjit tune --metrics`. Then the GPU tests.
set -uo pipefail
export OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > "$OUT/env.txt"
date -u >> "$OUT/env.txt"
{ cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/.deps/usr" -DKJIT_PYTHON=OFF &&
  cmake --build build-gpu --target kjit gpu_tests -j "$(nproc)"; } > "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
kjit=$PWD/build-gpu/kjit
export KJIT_CACHE_DIR=/tmp/kjit-cache
echo "== ceilings: the tensor probe, measured three times afresh"
for k in 1 2 3; do
  rm -rf $KJIT_CACHE_DIR/ceilings
  timeout 120 "$kjit" run configs/mlp_layer.json --json "$OUT/logs/mlp_$k.json" > "$OUT/logs/mlp_$k.txt" 2>&1
  echo "round $k exit $?: $(cat $KJIT_CACHE_DIR/ceilings/*.json | tr -d '\n ')"
  grep -E "roofline:|compute:" "$OUT/logs/mlp_$k.txt"
done 2>&1 | tee "$OUT/ceilings.txt"
summary='import json,sys
r=json.load(open(sys.argv[1])); r=r[0] if isinstance(r,list) else r
m=lambda k: r.get("metric_"+k)
f=lambda v,d=1: "-" if v is None else round(v,d)
print(r.get("status"), "cold_us", f(1000*(r.get("kernel_cold_median_ms") or 0)), "dram/model", f(r.get("dram_bytes_over_model"),3),
      "read_MB", f((m("dram_read_bytes") or 0)/1e6), "write_MB", f((m("dram_write_bytes") or 0)/1e6), "model_MB", f(r.get("bytes_moved",0)/1e6),
      "dram%", f(m("dram_throughput_pct")), "l2hit%", f(m("l2_hit_rate_pct")), "warn", r.get("warnings"))'
echo "== --metrics=memory on every shipped config"
for c in configs/*.json; do
  name=$(basename "$c" .json)
  timeout 120 "$kjit" run "$c" --metrics=memory --json "$OUT/logs/m_$name.json" > "$OUT/logs/m_$name.txt" 2>&1
  echo "$name: exit $? $(python3 -c "$summary" "$OUT/logs/m_$name.json" 2>/dev/null || tail -2 "$OUT/logs/m_$name.txt")"
done 2>&1 | tee "$OUT/metrics.txt"
echo "== the counter pass changes no timed figure: off, on, off, on"
for c in hidden_layer row_sum mlp_layer; do
  for round in 1 2; do for mode in off on; do
    extra=(); [ $mode = on ] && extra=(--metrics)
    timeout 120 "$kjit" run configs/$c.json "${extra[@]}" --json "$OUT/logs/n_${c}_${mode}_$round.json" > /dev/null 2>&1
    echo "$c $mode $round: $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); r=r[0] if isinstance(r,list) else r; print(round(1000*r["kernel_cold_median_ms"],2), "us ±", round(100*(r.get("kernel_cold_noise") or 0),2), "%")' "$OUT/logs/n_${c}_${mode}_$round.json" 2>&1)"
  done; done
done 2>&1 | tee "$OUT/noise.txt"
echo "== kjit tune --metrics"
timeout 200 "$kjit" tune configs/tune_softmax.json --strategy random --budget 8 --metrics=memory --json "$OUT/logs/tune.json" > "$OUT/tune.txt" 2>&1
echo "tune exit $?" >> "$OUT/tune.txt"
python3 -c 'import json,sys
for r in json.load(open(sys.argv[1])):
    print(r["evaluation"], r["point"], r["status"], r["from"], round(1000*(r["ms"] or 0),2), "us", "dram_read_MB", round((r.get("metric_dram_read_bytes") or 0)/1e6,2), "dram%", r.get("metric_dram_throughput_pct"))' "$OUT/logs/tune.json" >> "$OUT/tune.txt" 2>&1
cat "$OUT/tune.txt"
timeout 400 build-gpu/tests/gpu_tests > "$OUT/gpu_tests.txt" 2>&1; echo "gpu_tests exit $?"; tail -3 "$OUT/gpu_tests.txt"
cp "$OUT/logs/m_row_sum.txt" "$OUT/report_row_sum.txt"
tar czf "$OUT/logs.tar.gz" -C "$OUT" logs && rm -rf "$OUT/logs"
