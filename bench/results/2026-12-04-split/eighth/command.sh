#!/usr/bin/env bash
# Issue 40, the split's eighth call: why the decode step (16 × 4096 × 4096 + bias, bfloat16) is
# behind cuBLAS: Nsight Compute on kjit's kernel at the defaults and on cuBLASLt's addmm, one cold
# launch each (ncu flushes the caches before it; --clock-control none leaves the clocks alone).
set -uo pipefail
export OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT/logs"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw,temperature.gpu --format=csv > "$OUT/env.txt"
{ cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/.deps/usr" -DKJIT_PYTHON=OFF &&
  cmake --build build-gpu --target kjit -j "$(nproc)"; } > "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
kjit=$PWD/build-gpu/kjit
export KJIT_CACHE_DIR=/tmp/kjit-cache
sections=(--section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy
          --section WarpStateStats --section SchedulerStats)
gemm=(configs/mlp_layer.json --set dtype=bfloat16 --set 'shape=[16,4096]' --set 'inputs.W.shape=[4096,4096]'
      --set 'stages=[{"op":"matmul","input":"x_in","by":"W"},{"op":"bias","by":"b"}]' --set measure.warmup=2 --set measure.repeat=3 --skip-ceiling)
"$kjit" run "${gemm[@]}" > "$OUT/logs/warm_cache.log" 2>&1  # compiled once, outside the profile
timeout 200 ncu --clock-control none -k regex:matmul --launch-skip 3 --launch-count 1 "${sections[@]}" \
    "$kjit" run "${gemm[@]}" > "$OUT/ncu_kjit.txt" 2>&1; echo "ncu kjit: exit $?"
cat > "$OUT/logs/addmm.py" <<'PY'
import torch
x = torch.randn(16, 4096, device="cuda", dtype=torch.bfloat16)
w = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16) * 0.02
b = torch.randn(4096, device="cuda", dtype=torch.bfloat16)
for _ in range(6):
    torch.addmm(b, x, w)
torch.cuda.synchronize()
PY
timeout 200 ncu --clock-control none --launch-skip 4 --launch-count 1 "${sections[@]}" \
    python3 "$OUT/logs/addmm.py" > "$OUT/ncu_cublaslt.txt" 2>&1; echo "ncu cublaslt: exit $?"
grep -E "^  [a-zA-Z_0-9]+.*\(|Duration|DRAM Throughput|Memory Throughput|Compute \(SM\)|L2 Hit|Achieved Occupancy|Registers|Block Size|Grid Size|Stall|One or More|No Eligible|Issued Warp" "$OUT/ncu_kjit.txt" "$OUT/ncu_cublaslt.txt" | head -80
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
cd "$OUT/logs" && tar czf ../data.tgz . && cd "$OUT" && rm -rf logs
