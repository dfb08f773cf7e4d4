#!/usr/bin/env bash
# The exploring call after call 1 (run from the repository root at commit 814e4bc, with .deps):
# row caches that leave registers free, at smaller blocks, and registers capped by --maxrregcount
# (which __launch_bounds__ overrides: the capped kernels kept their register counts).
#   bash explore.sh OUT_DIR
set -u
out=$1
b=build-gpu
{ cmake -S . -B $b -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/.deps/usr" && cmake --build $b -j 16 --target kjit; } > $out/build.log 2>&1 || { tail -30 $out/build.log; exit 1; }
k=$b/kjit
k_sweep() { local name=$1; shift; echo "== $name"; $k sweep "$@" --quiet --json "$out/$name.json" 2>&1 | tail -3; }
for cfg in layernorm rmsnorm; do
  k_sweep blocks_$cfg configs/$cfg.json --set 'sweep={"shape":[[4096,4096],[1024,32768]],"dtype":["float32","bfloat16"],"launch.row_cache":["none","shared"],"launch.block":[128,256,512,1024],"compile.fast_math":[false,true],"launch.streaming":[false,true]}'
  k_sweep regs_$cfg configs/$cfg.json --set 'sweep={"shape":[[4096,4096],[1024,32768]],"dtype":["float32","bfloat16"],"launch.row_cache":["none","shared","inputs"],"launch.block":[256,512,1024],"compile.options":[["--maxrregcount=32"],["--maxrregcount=40"]],"compile.fast_math":[false,true]}'
done
k_sweep blocks_softmax configs/softmax.json --set 'sweep={"shape":[[4096,4096],[1024,32768]],"dtype":["float32","bfloat16"],"launch.row_cache":["none","shared"],"launch.block":[128,256,512,1024],"stages[2].formula":["classic","online"],"compile.fast_math":[false,true],"launch.streaming":[false,true]}'
k_sweep regs_softmax configs/softmax.json --set 'sweep={"shape":[[4096,4096],[1024,32768]],"dtype":["float32","bfloat16"],"launch.row_cache":["none","shared","inputs"],"launch.block":[256,512,1024],"compile.options":[["--maxrregcount=32"],["--maxrregcount=40"]],"stages[2].formula":["classic","online"],"compile.fast_math":[false,true]}'
# explore.log ends with the six fastest points of each file per shape and dtype (a short Python
# summary, not kept here); explore.tgz holds the sweeps' JSON records.
