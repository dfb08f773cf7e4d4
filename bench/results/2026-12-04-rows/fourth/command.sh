#!/usr/bin/env bash
# Issue 40, rows, fourth call: exp as __expf where results are stored in 16 bits (compile.exp
# "auto"), with the edge test per vector, two rows an SM in shared memory and the separate
# reference fixed: every GPU test, then every row case of bench/defaults and the LLaMA
# up-projection with SiLU (an exp per element) at the defaults with the peers, two rounds; and
# the softmax at 32,000 with compile.exp "precise" beside it.
set -uo pipefail
export OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > "$OUT/env.txt"
{ cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/.deps/usr" -DKJIT_PYTHON=OFF &&
  cmake --build build-gpu --target kjit gpu_tests -j "$(nproc)"; } > "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
kjit=$PWD/build-gpu/kjit
export KJIT_CACHE_DIR=/tmp/kjit-cache
echo "== gpu_tests"
timeout 330 build-gpu/tests/gpu_tests > "$OUT/logs/gpu_tests.log" 2>&1
echo "gpu_tests exit $?"; tail -3 "$OUT/logs/gpu_tests.log"; grep -m4 -A9 "ERROR" "$OUT/logs/gpu_tests.log"
summary='import json,sys; r=json.load(open(sys.argv[1])); r=r[0] if isinstance(r,list) else r; print(r.get("status"), "cold_us", round(1000*(r.get("kernel_cold_median_ms") or 0),1), "|", r.get("variant"))'
for round in 1 2; do for exp in auto precise; do
  timeout 60 "$kjit" run configs/softmax.json --skip-ceiling --set dtype=bfloat16 --set 'shape=[1024,32000]' --set "compile.exp=\"$exp\"" \
    --json "$OUT/logs/exp_${exp}_$round.json" > "$OUT/logs/exp_${exp}_$round.txt" 2>&1
  echo "exp $exp round $round: $(python3 -c "$summary" "$OUT/logs/exp_${exp}_$round.json" 2>/dev/null || tail -2 "$OUT/logs/exp_${exp}_$round.txt")"
done; done | tee "$OUT/exp.txt"
echo "== defaults"
timeout 240 python3 bench/defaults/run.py "$kjit" "$OUT/logs" --rounds 2 \
  --only llama_up_silu,softmax_32000,softmax_50257,softmax_128256,softmax_8192,causal_softmax_8192,layernorm_768,layernorm_4096,rmsnorm_768,rmsnorm_4096
python3 scripts/defaults_table.py "$OUT/logs" | grep -v " - | - " | tee "$OUT/defaults_table.md"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
cd "$OUT/logs" && tar czf ../data.tgz . && cd "$OUT" && rm -rf logs
