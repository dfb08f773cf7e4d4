#!/usr/bin/env bash
# The wgmma rung's element-by-element copy path (rows not on 16-byte boundaries: K = 1001),
# which the second call's odd shapes left to mma: forced to wgmma, verified on the H200.
set -uo pipefail
export OUT=${OUT:-$PWD/gpu-results}
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/env.txt"
{ cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/.deps/usr" -DKJIT_PYTHON=OFF &&
  cmake --build build-gpu --target kjit -j "$(nproc)"; } > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
for dtype in bfloat16 float16; do
    for extra in "" "--set launch.tile_m=64 --set launch.schedule=pingpong"; do
        timeout 60 build-gpu/kjit run configs/mlp_layer.json --skip-ceiling --set dtype=$dtype --set launch.rung=wgmma \
            --set 'shape=[1000,1001]' --set 'inputs.W.shape=[1001,999]' $extra --set measure.repeat=5 2>&1 |
            grep -E "variant|check|cold median" | tee -a "$OUT/wgmma_elementwise.log"
    done
done
