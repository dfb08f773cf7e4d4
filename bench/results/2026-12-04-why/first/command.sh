#!/usr/bin/env bash
# Issue 44 on the H200: kjit sass with the toolkit's own nvdisasm; `kjit run --metrics` (CUPTI's
# range profiler) on every shipped config, with the DRAM bytes counted against kjit's model; and
# the timed figures with the counter pass on and off, alternated, to show it changes none.
set -uo pipefail
export OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > "$OUT/env.txt"
{ cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/.deps/usr" -DKJIT_PYTHON=OFF &&
  cmake --build build-gpu --target kjit -j "$(nproc)"; } > "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
kjit=$PWD/build-gpu/kjit
export KJIT_CACHE_DIR=/tmp/kjit-cache
echo "== sass with the machine's nvdisasm"
which nvdisasm; nvdisasm --version | tail -2
timeout 60 "$kjit" sass configs/mlp_layer.json --mix > "$OUT/logs/sass_mlp.txt" 2>&1; echo "sass exit $?"; head -20 "$OUT/logs/sass_mlp.txt"
summary='import json,sys
r=json.load(open(sys.argv[1])); r=r[0] if isinstance(r,list) else r
m=lambda k: r.get("metric_"+k)
f=lambda v,d=1: "-" if v is None else round(v,d)
stalls=sorted(((v,k[13:]) for k,v in r.items() if k.startswith("metric_stall_") and v is not None), reverse=True)[:2]
print(r.get("status"), "cold_us", f(1000*(r.get("kernel_cold_median_ms") or 0)), "model/dram", f(r.get("dram_bytes_over_model"),3),
      "dram%", f(m("dram_throughput_pct")), "l2hit%", f(m("l2_hit_rate_pct")), "occ%", f(m("achieved_occupancy_pct")),
      "sm%", f(m("sm_throughput_pct")), "tensor%", f(m("tensor_pipe_pct")), "gmma%", f(m("tensor_gmma_pipe_pct")),
      "stalls", [(k, round(v,2)) for v,k in stalls], "warn", r.get("warnings"))'
echo "== --metrics on every shipped config"
for c in configs/*.json; do
  name=$(basename "$c" .json)
  timeout 120 "$kjit" run "$c" --skip-ceiling --metrics --json "$OUT/logs/m_$name.json" > "$OUT/logs/m_$name.txt" 2>&1
  echo "$name: exit $? $(python3 -c "$summary" "$OUT/logs/m_$name.json" 2>/dev/null || tail -2 "$OUT/logs/m_$name.txt")"
done 2>&1 | tee "$OUT/metrics.txt"
echo "== the counter pass changes no timed figure: off, on, off, on"
for c in hidden_layer softmax mlp_layer; do
  for round in 1 2; do for mode in off on; do
    extra=(); [ $mode = on ] && extra=(--metrics)
    timeout 120 "$kjit" run configs/$c.json --skip-ceiling "${extra[@]}" --json "$OUT/logs/n_${c}_${mode}_$round.json" > /dev/null 2>&1
    echo "$c $mode $round: $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); r=r[0] if isinstance(r,list) else r; print(round(1000*r["kernel_cold_median_ms"],2), "us ±", round(100*(r.get("kernel_cold_noise") or 0),2), "%")' "$OUT/logs/n_${c}_${mode}_$round.json" 2>&1)"
  done; done
done 2>&1 | tee "$OUT/noise.txt"
cp "$OUT/logs/m_hidden_layer.txt" "$OUT/report_hidden_layer.txt"
tar czf "$OUT/logs.tar.gz" -C "$OUT" logs && rm -rf "$OUT/logs"
