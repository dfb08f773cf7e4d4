#!/usr/bin/env bash
# Second wgmma call: the GPU matmul test (cooperative and ping-pong, odd shapes), the wgmma
# launch space at the three shapes, the peers once.
out=$OUT
timeout 240 scripts/gpu-check.sh build > $out/build.log 2>&1 || { tail -30 $out/build.log; exit 1; }
k=build-gpu/kjit
timeout 200 build-gpu/tests/gpu_tests -tc="matmuls verify*" > $out/gputest.log 2>&1; echo "gpu test rc=$?"; tail -4 $out/gputest.log
mkdir -p $out/tune
alone='stages=[{"op":"matmul","input":"x_in","by":"W"}]'
axes='{"launch.tile_m":[64,128,256],"launch.tile_n":[128,256],"launch.schedule":["cooperative","pingpong"],"launch.stages":[3,4],"launch.group_m":[8,16]}'
for shape in 8192x8192x8192 4096x4096x4096 8192x4096x4096; do
  IFS=x read -r m n kk <<< "$shape"
  timeout 150 $k tune configs/mlp_layer.json --set "shape=[$m,$kk]" --set "inputs.W.shape=[$kk,$n]" --set "$alone" \
     --set launch.rung=wgmma --set measure.max_ms=100 --set "tune={\"axes\":$axes}" --strategy exhaustive \
     --json $out/tune/$shape.json > $out/tune/$shape.log 2>&1; echo "tune $shape rc=$?"
  tail -8 $out/tune/$shape.log
done
timeout 200 python3 bench/peers/gemm_peers.py --shapes 4096x4096x4096,8192x8192x8192,8192x4096x4096 --compile-mode max-autotune-no-cudagraphs > $out/gemm_peers.jsonl 2> $out/peers.err; echo "peers rc=$?"
cd $out && tar czf tune.tgz tune && rm -rf tune
