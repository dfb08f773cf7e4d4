#!/usr/bin/env bash
# Four short calls on the machine `first` left warm, at the decode step `first` found behind
# cuBLASLt (8 × 3584 × 18944, Qwen2.5's down-projection): each ran as one command line; they are
# written out here in order. decode.txt holds what each printed; data.tgz the first call's records.
set -uo pipefail
source bench/gemm_call.sh
# 1
for l in '{"rung":"stream","cores":"tensor"}' '{"rung":"stream","cores":"tensor","split_k":2}' '{"rung":"stream","cores":"tensor","split_k":4}' \
         '{"rung":"stream","cores":"tensor","split_k":2,"tile_n":32}' '{"rung":"stream","cores":"tensor","split_k":4,"tile_n":32}' \
         '{"rung":"stream","cores":"tensor","split_k":4,"tile_n":32,"warps_n":8}' '{"rung":"wgmma"}'; do
  for r in 1 2; do gemm "q_$r" 8 3584 18944 bfloat16 --set "launch=$l"; done; echo "  ^ $l"
done
pack
# 2
for l in '{"rung":"stream","cores":"tensor","buffers":2}' '{"rung":"stream","cores":"tensor","tile_n":16}' \
         '{"rung":"stream","cores":"tensor","tile_n":16,"buffers":2}' '{"rung":"stream","cores":"tensor","tile_n":16,"warps_n":8,"buffers":2}' \
         '{"rung":"wgmma","tile_m":64,"tile_n":64,"split_k":4,"schedule":"pingpong","buffers":6}'; do
  for r in 1 2; do gemm "q_$r" 8 3584 18944 bfloat16 --set "launch=$l"; done; echo "  ^ $l"
done
for m in 4 16; do gemm "d_$m" $m 3584 18944 bfloat16; gemm "w_$m" $m 3584 18944 bfloat16 --set 'launch={"rung":"wgmma"}'; done
python3 bench/peers/gemm_peers.py --shapes 4x3584x18944,16x3584x18944 --tools cublaslt_bias --no-fp32 --repeat 20
# 3
for s in 8x4096x4096 8x4096x8192 8x4096x11008 16x4096x14336 4x4096x14336 8x1024x16384; do
  IFS=x read m n k <<< "$s"
  for b in 1 2; do gemm "s_${s}_b$b" $m $n $k bfloat16 --set "launch={\"rung\":\"stream\",\"cores\":\"tensor\",\"buffers\":$b}"; done
done
python3 bench/peers/gemm_peers.py --shapes 8x4096x4096,8x4096x8192,8x4096x11008,16x4096x14336,4x4096x14336,8x1024x16384 \
  --tools cublaslt_bias --no-fp32 --repeat 20
# 4
for l in '{"rung":"stream","cores":"tensor","buffers":2,"split_k":2}' '{"rung":"stream","cores":"tensor","buffers":2,"split_k":4}'; do
  gemm s1 8 1024 16384 bfloat16 --set "launch=$l"; gemm s2 8 3584 18944 bfloat16 --set "launch=$l"; echo "  ^ $l"
done
gemm w1 8 1024 16384 bfloat16
