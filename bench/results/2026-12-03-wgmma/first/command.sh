#!/usr/bin/env bash
# First wgmma call: build, the GPU matmul test, wgmma and mma at 4096³ and 8192³.
out=$OUT
timeout 240 scripts/gpu-check.sh build > $out/build.log 2>&1 || { tail -30 $out/build.log; exit 1; }
tail -3 $out/build.log
k=build-gpu/kjit
alone='stages=[{"op":"matmul","input":"x_in","by":"W"}]'
for s in 4096 8192; do
  for r in wgmma mma; do
    echo "== $s $r" | tee -a $out/runs.log
    timeout 60 $k run configs/mlp_layer.json --set "shape=[$s,$s]" --set "inputs.W.shape=[$s,$s]" --set "$alone" --set launch.rung=$r --skip-ceiling --json $out/run-$s-$r.json >> $out/runs.log 2>&1; echo "rc=$?" | tee -a $out/runs.log
    grep -E "check|kernel  |cold|TFLOP" $out/runs.log | tail -4
  done
done
echo "== odd" | tee -a $out/runs.log
for shape in "17 1000 24" "1000 17 4097" "130 264 64" "1 1 1" "4097 4097 1000"; do
  read m n kk <<< "$shape"
  timeout 60 $k run configs/mlp_layer.json --set "shape=[$m,$kk]" --set "inputs.W.shape=[$kk,$n]" --set launch.rung=wgmma --skip-ceiling --set measure.repeat=3 --quiet >> $out/runs.log 2>&1; echo "$shape rc=$?" | tee -a $out/runs.log
done
timeout 200 build-gpu/tests/gpu_tests -tc="matmuls verify*" > $out/gputest.log 2>&1; echo "gpu test rc=$?"; tail -15 $out/gputest.log
