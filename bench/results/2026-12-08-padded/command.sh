#!/usr/bin/env bash
# Usage: command.sh SECTION... (tests unaligned thin norms row_copy defaults other)
#   tests: the GPU tests of the wgmma rung at rows the TMA unit cannot copy, which it now pads
#          first (a kernel copies A or B to rows 16-byte aligned; C's pieces go straight to C
#          where its rows are not): matmuls at odd shapes on every rung, and wgmma's split depth
#          and wide tiles at odd depths and widths; and the row kernels at odd shapes (norms over
#          short rows now hold the row as loaded, row_cache "inputs", on a warp a row);
#   unaligned: products whose rows are not 16-byte aligned at "auto" (now wgmma, padded first)
#          and on the mma rung (auto's choice before, element-by-element copies): GPT-2's output
#          layer 4096 × 50,257 × 768 and its thin form of 64 rows, the gradient of its input
#          4096 × 768 × 50,257 (K odd), and the same product padded to 50,304 columns, with cuBLAS
#          and cuBLASLt's bias at each shape in the same call; a decode step of 8 rows of it at
#          "auto" (wgmma, B padded) and on the stream rung's CUDA cores; two rounds.
#   thin:  (second call) C's unaligned rows stored by the consumers' threads from shared memory,
#          not piece by piece from registers: GPT-2's output layer and its input's gradient at
#          "auto", and products of 64 to 256 rows of it at "auto", on mma and on wgmma (B padded),
#          a decode step of 8 at "auto" (the stream rung now), cuBLAS and cuBLASLt beside them;
#   norms: layer and RMS norm over 4096 rows of 768 holding their values (row_cache "values", the
#          default before) and as loaded (the default now), two rounds alternated;
#   row_copy: (not run yet) the consumers' copy of C's unaligned rows a warp a row, 32 columns a
#          step unrolled, the row's place computed once (row-copy.patch, applied to a copy of the
#          templates: --templates), against the templates' loop over the tile's elements, two
#          alternated rounds at GPT-2's output layer (1190 µs on 2026-12-08, the aligned shape 480),
#          then the matmuls' odd-shape GPU test with the patch in the templates;
#   defaults: bench/defaults/run.py, every public shape of issue 40 at the defaults, two rounds
#          alternated, the peers in the same call, and its table;
#   other: the same over bench/defaults/other_models.json (shapes no rule was measured on, GPT-2's
#          output layer among them), one round.
# Each section packs what it wrote.
set -uo pipefail
source bench/gemm_call.sh
tests() {
  gpu_tests "matmuls verify at odd shapes*" 400
  gpu_tests "wgmma's split depth*" 300
  gpu_tests "row kernels verify at odd shapes*" 300
  pack
}
unaligned() {
  {
  for round in 1 2; do
    for shape in 4096x50257x768 4096x50304x768 64x50257x768 4096x768x50257; do
      IFS=x read -r m n k <<< "$shape"
      gemm "r${round}_${shape}_auto" "$m" "$n" "$k" bfloat16
      gemm "r${round}_${shape}_mma" "$m" "$n" "$k" bfloat16 --set 'launch.rung="mma"'
    done
    # a decode step of 8 rows: auto pads B for wgmma; CUDA cores stream it once, unpadded
    gemm "r${round}_8x50257x768_auto" 8 50257 768 bfloat16
    gemm "r${round}_8x50257x768_stream" 8 50257 768 bfloat16 --set 'launch.rung="stream"'
    pack
  done
  (cd bench/peers && timeout 150 python3 gemm_peers.py --no-fp32 --tools cublas,cublaslt_bias \
    --shapes 4096x50257x768,4096x50304x768,64x50257x768,4096x768x50257,8x50257x768 2>> "$OUT/logs/peers.err"; echo "gemm peers: exit $?")
  } 2>&1 | tee "$OUT/unaligned.txt"
  pack
}
thin() {
  {
  gemm "lm_head_auto" 4096 50257 768 bfloat16
  gemm "lm_head_grad_auto" 4096 768 50257 bfloat16
  for m in 64 128 256; do
    gemm "m${m}_auto" $m 50257 768 bfloat16
    gemm "m${m}_mma" $m 50257 768 bfloat16 --set 'launch.rung="mma"'
    gemm "m${m}_wgmma" $m 50257 768 bfloat16 --set 'launch.rung="wgmma"'
  done
  gemm "m8_auto" 8 50257 768 bfloat16
  pack
  (cd bench/peers && timeout 100 python3 gemm_peers.py --no-fp32 --tools cublas,cublaslt_bias \
    --shapes 4096x50257x768,128x50257x768,256x50257x768 2>> "$OUT/logs/peers.err"; echo "gemm peers: exit $?")
  } 2>&1 | tee "$OUT/thin.txt"
  pack
}
norms() {
  for round in 1 2; do for op in rmsnorm layernorm; do for cache in values inputs; do
    row "r${round}_${op}_768_${cache}" $op.json 4096 768 --set "launch.row_cache=\"$cache\"" --set 'launch.row_mapping="warp"'
  done; done; done 2>&1 | tee "$OUT/norms.txt"
  pack
}
row_copy() {
  templates_with /tmp/row_copy bench/results/2026-12-08-padded/row-copy.patch || return 1
  for round in 1 2; do
    gemm "r${round}_lm_head_loop" 4096 50257 768 bfloat16
    gemm "r${round}_lm_head_rows" 4096 50257 768 bfloat16 --templates /tmp/row_copy
  done 2>&1 | tee "$OUT/row_copy.txt"
  patch -p1 < bench/results/2026-12-08-padded/row-copy.patch > /dev/null && gpu_tests "matmuls verify at odd shapes*" 300
  pack
}
defaults() {
  timeout 420 python3 bench/defaults/run.py "$kjit" "$OUT/logs/defaults" --rounds 2 > "$OUT/logs/defaults.log" 2>&1; echo "defaults: exit $?"
  python3 scripts/defaults_table.py "$OUT/logs/defaults" | tee "$OUT/defaults_table.md"
  pack
}
other() {
  local cases=bench/defaults/other_models.json
  timeout 300 python3 bench/defaults/run.py "$kjit" "$OUT/logs/other" --cases $cases > "$OUT/logs/other.log" 2>&1; echo "other: exit $?"
  python3 scripts/defaults_table.py "$OUT/logs/other" --cases $cases | tee "$OUT/other_table.md"
  pack
}
for section in "$@"; do "$section"; done
