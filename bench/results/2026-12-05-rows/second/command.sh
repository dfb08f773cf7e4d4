#!/usr/bin/env bash
# Issue 40, long rows, after the first call: a sum the config leaves is online where the row is
# read from shared or global memory in each pass, and a row in shared memory lands in groups of
# copies (launch.copy_groups, auto 8), the first pass starting on a group as it lands. The GPU
# test of row kernels at odd shapes (copy groups 3 and 16 among its launches); then softmax, RMS
# and layer norm over 1024 rows of 128,256, 50,257 and 32,000 bfloat16 at the defaults, beside
# copy groups 1, 2, 4, 16 and the classic sum, two rounds; a same-size copy.
set -uo pipefail
export OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > "$OUT/env.txt"
{ cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/.deps/usr" -DKJIT_PYTHON=OFF &&
  cmake --build build-gpu --target kjit gpu_tests -j "$(nproc)"; } > "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
kjit=$PWD/build-gpu/kjit
export KJIT_CACHE_DIR=/tmp/kjit-cache
pack() { (cd "$OUT/logs" && tar czf ../data.tgz .); }
rows() {
  local name=$1 cfg=$2 cols=$3; shift 3
  timeout 60 "$kjit" run "configs/$cfg" --skip-ceiling --set dtype=bfloat16 --set "shape=[1024,$cols]" "$@" \
    --json "$OUT/logs/$name.json" > "$OUT/logs/$name.txt" 2>&1
  echo "$name: exit $? $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); r=r[0] if isinstance(r,list) else r; print(r.get("status"), "cold_us", round(1000*(r.get("kernel_cold_median_ms") or 0),1), "regs", r.get("registers"), r.get("variant"))' "$OUT/logs/$name.json" 2>/dev/null || tail -2 "$OUT/logs/$name.txt")"
}
classic='stages[2].formula="classic"'
for round in 1 2; do for cols in 128256 50257 32000; do
  rows "r${round}_${cols}_default" softmax.json $cols
  for g in 1 2 4 16; do rows "r${round}_${cols}_groups$g" softmax.json $cols --set launch.copy_groups=$g; done
  rows "r${round}_${cols}_classic" softmax.json $cols --set "$classic"
  rows "r${round}_${cols}_classic_groups1" softmax.json $cols --set "$classic" --set launch.copy_groups=1
  rows "r${round}_${cols}_rms" rmsnorm.json $cols
  rows "r${round}_${cols}_rms_groups1" rmsnorm.json $cols --set launch.copy_groups=1
  rows "r${round}_${cols}_layernorm" layernorm.json $cols
  rows "r${round}_${cols}_layernorm_groups1" layernorm.json $cols --set launch.copy_groups=1
done; done 2>&1 | tee "$OUT/rows.txt"
python3 - <<'PY' | tee "$OUT/copy.txt"
import torch
for cols in (128256, 50257, 32000):
    x = torch.randn(1024, cols, device="cuda", dtype=torch.bfloat16); y = torch.empty_like(x)
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda"); times = []
    for _ in range(25):
        flush.zero_(); a, b = torch.cuda.Event(True), torch.cuda.Event(True); a.record(); y.copy_(x); b.record(); b.synchronize(); times.append(a.elapsed_time(b) * 1000)
    times.sort(); print(f"copy {cols}: cold median {times[12]:.1f} us (min {times[0]:.1f}, max {times[-1]:.1f})")
PY
pack
timeout 300 build-gpu/tests/gpu_tests -tc="row kernels verify at odd shapes*" > "$OUT/logs/gpu_rows.log" 2>&1
echo "gpu_tests rows: exit $?"; tail -4 "$OUT/logs/gpu_rows.log"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
pack
