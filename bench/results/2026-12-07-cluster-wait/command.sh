#!/usr/bin/env bash
# Usage: command.sh SECTION... (tests rows transposes against_tune short_tunes
#        transpose_blocks window_metrics)
#   tests: the GPU tests the last changes touch: persistent attention blocks with the turn handed
#          across items (in the templates since 25d2fc2, no GPU test run with it yet) $ROUNDS
#          times (3), attention at odd shapes, and the row kernels at odd shapes (clusters that
#          loop over rows and clusters that do not; the call of 2026-12-07 ran them with a
#          cluster's reduce on one barrier, cluster-wait.patch);
#   rows:  a row over a cluster of blocks, whose reduce waits on two cluster barriers, against
#          one (cluster-wait.patch, applied to a copy of the templates: --templates; the call of
#          2026-12-07 ran with the patch in the templates and took it back for the copy), softmax
#          at 1024 × 128,256 and 151,936 and 512 × 256,000, RMS and layer norm at 1024 × 128,256,
#          two alternated rounds, each beside the copy ceiling kjit measures; 1024 × 50,257 (one
#          block a row, no cluster) as the control; and clusters that loop over rows with the next
#          row in flight (launch.grid, which no tune space holds);
#   transposes: `kjit tune` exhaustive at 4096 × 768 and 4096 × 4096 bfloat16, the first the one
#          transpose of issue 40 behind `torch.compile` (7.3 µs against 6.2 on 2026-12-05, a
#          copy 7.0), with PyTorch's transposes and a copy at the same shapes in the same call.
#   against_tune: bench/defaults/against_tune.py, every case of issue 40's public set tuned, then
#          its default beside the tune's best, two rounds (run that evening in two calls); $ONLY
#          names the cases (all where empty), $AT_LIMIT the seconds it may take (900);
#   short_tunes: `kjit tune` exhaustive over the wgmma rung's launches at the grid's points
#          furthest behind cuDNN (1k × 128, causal and not; 1k × 64 causal, 0.71 of cuDNN on
#          2026-12-07), whether a launch closes them (prepared, not run on 2026-12-07).
#   transpose_blocks: a swizzled tile with no stage after it written by threads that each read a
#          block of width × width elements once and transpose it in registers, where a thread read
#          width vectors for each vector it wrote (transpose-blocks.patch, applied to a copy of the
#          templates: --templates), against the templates, two alternated rounds at issue 40's
#          three bfloat16 transposes, then odd shapes verified with it (lost that evening).
#   window_metrics: the hardware's counters (--metrics) of attention at 8k × 128 unmasked and with
#          the causal window of 1,024 (0.61 of it on 2026-12-07), and at 1k × 128, whose items are as
#          short as the window's: what the window's tiles wait on that the plain kernel's do not.
#   unaligned: a product whose rows are not 16-byte aligned, GPT-2's output layer (4096 × 50,257 ×
#          768 and a decode step of it: N odd, so neither TMA nor cp.async copies B's rows) at
#          "auto" and on the wgmma rung, beside the same product padded to 50,304 columns, with
#          cuBLAS and cuBLASLt's bias at both shapes: how far the element-by-element copies fall.
#   decode64: the decode step of 64 rows (64 × 4096 × 4096 + bias, 0.89 of cuBLASLt on 2026-12-07 on
#          wgmma's thin tiles, whose tune space holds no stream launch) on the stream rung's tensor
#          cores, 32 columns a block on 8 or 16 warps or 64 on 8, the depth split in 1 or 2, two rounds
#          beside "auto" and cuBLASLt.
# Each section packs what it wrote.
set -uo pipefail
source bench/gemm_call.sh
here=bench/results/2026-12-07-cluster-wait
tests() {
  for round in $(seq "${ROUNDS:-3}"); do gpu_tests "persistent attention blocks*" 120; done
  gpu_tests "attention verifies at odd shapes*" 300
  gpu_tests "row kernels verify at odd shapes*" 300
  pack
}
rows() {
  templates_with /tmp/one_wait "$here/cluster-wait.patch" || return 1
  # 49 clusters of 8: three blocks an SM of 132, each two rows' eighths in shared memory
  local looping='launch={"grid":392,"cluster":8,"row_cache":"shared","block":256}'
  {
  for round in 1 2; do
    for shape in 1024x128256 1024x151936 512x256000 1024x50257; do
      IFS=x read -r r c <<< "$shape"
      row "r${round}_softmax_${c}_one_wait" softmax.json "$r" "$c" --templates /tmp/one_wait
      row "r${round}_softmax_${c}_two_waits" softmax.json "$r" "$c"
    done
    for c in 128256 151936; do  # clusters that loop over rows, the next row in flight
      row "r${round}_softmax_${c}_looping" softmax.json 1024 "$c" --set "$looping"
    done
    for op in rmsnorm layernorm; do
      row "r${round}_${op}_128256_one_wait" $op.json 1024 128256 --templates /tmp/one_wait
      row "r${round}_${op}_128256_two_waits" $op.json 1024 128256
    done
    pack
  done
  } 2>&1 | tee "$OUT/rows.txt"
}
transposes() {
  for shape in 4096x768 4096x4096; do
    timeout 150 "$kjit" tune configs/transpose.json --strategy exhaustive --set dtype=bfloat16 \
      --set "shape=[${shape/x/,}]" --json "$OUT/logs/tune_transpose_$shape.json" > "$OUT/logs/tune_transpose_$shape.txt" 2>&1
    echo "tune $shape: exit $?"; tail -12 "$OUT/logs/tune_transpose_$shape.txt"
  done 2>&1 | tee "$OUT/transposes.txt"
  (cd bench/peers && timeout 100 python3 transpose_peers.py --shapes 4096x768,4096x4096 --dtypes bfloat16 \
    >> "$OUT/transposes.txt" 2>> "$OUT/logs/peers.err"; echo "transpose peers: exit $?")
  pack
}
against_tune() {
  timeout "${AT_LIMIT:-900}" python3 bench/defaults/against_tune.py "$kjit" "$OUT/logs" --only "${ONLY:-}" > "$OUT/against_tune.md" 2>> "$OUT/logs/against_tune.err"
  echo "against_tune: exit $?"; tail -25 "$OUT/against_tune.md"
  pack
}
short_tunes() {
  local causal="col > row ? -inf : x"
  for p in 1024:128:x 1024:128:causal 1024:64:causal; do
    IFS=: read -r seq dim mask <<< "$p"
    local batch=$((16384 / seq)) heads=$((2048 / dim)) score=x
    [ "$mask" = causal ] && score=$causal
    timeout 240 "$kjit" tune configs/attention.json --strategy exhaustive --set "shape=[$((batch * heads * seq)),$dim]" \
      --set "inputs.k.shape=[$((batch * heads * seq)),$dim]" --set "inputs.v.shape=[$((batch * heads * seq)),$dim]" \
      --set "stages[0].batch=$batch" --set "stages[0].heads=$heads" --set "stages[0].kv_heads=$heads" \
      --set "stages[0].score=\"$score\"" --json "$OUT/logs/tune_s${seq}_d${dim}_$mask.json" > "$OUT/logs/tune_s${seq}_d${dim}_$mask.txt" 2>&1
    echo "tune ${seq} × ${dim} $mask: exit $?"; grep -A6 "^  best" "$OUT/logs/tune_s${seq}_d${dim}_$mask.txt"
  done 2>&1 | tee "$OUT/short_tunes.txt"
  pack
}
transpose_blocks() {
  templates_with /tmp/blocks "$here/transpose-blocks.patch" || return 1
  local swizzled='launch.layout="swizzled"'
  {
  for round in 1 2; do
    for shape in 4096x768 4096x4096 4096x11008; do
      IFS=x read -r r c <<< "$shape"
      row "r${round}_transpose_${shape}_blocks" transpose.json "$r" "$c" --templates /tmp/blocks --set "$swizzled"
      row "r${round}_transpose_${shape}_swizzled" transpose.json "$r" "$c" --set "$swizzled"
      row "r${round}_transpose_${shape}_default" transpose.json "$r" "$c"
    done
  done
  for shape in 1000x777 4097x4096 33x4096; do  # vectors of 1 where a side is odd; tiles cut short
    IFS=x read -r r c <<< "$shape"
    for dtype in bfloat16 float32 float64; do
      row "odd_transpose_${shape}_$dtype" transpose.json "$r" "$c" --templates /tmp/blocks --set "$swizzled" --set "dtype=$dtype"
    done
  done
  } 2>&1 | tee "$OUT/transpose_blocks.txt"
  pack
}
window_metrics() {
  local window="col > row || row - col >= 1024 ? -inf : x"
  {
  LIMIT=120 point metrics_8k128_plain 8192 128 2 16 16 x --metrics
  LIMIT=120 point metrics_8k128_window 8192 128 2 16 16 "$window" --metrics
  LIMIT=120 point metrics_1k128_plain 1024 128 16 16 16 x --metrics
  } 2>&1 | tee "$OUT/window_metrics.txt"
  pack
}
unaligned() {
  {
  for n in 50257 50304; do
    gemm "lm_head_${n}_auto" 4096 $n 768 bfloat16
    gemm "lm_head_${n}_wgmma" 4096 $n 768 bfloat16 --set 'launch.rung="wgmma"'
    gemm "lm_head_decode_${n}_auto" 1 $n 768 bfloat16
  done
  for columns in 16 32; do  # a warp's loads 2 bytes a column: 8 columns (auto's) read 16 bytes of a row
    gemm "lm_head_decode_50257_columns_$columns" 1 50257 768 bfloat16 --set "launch={\"rung\":\"stream\",\"tile_n\":$columns}"
  done
  (cd bench/peers && timeout 120 python3 gemm_peers.py --no-fp32 --tools cublas,cublaslt_bias \
    --shapes 4096x50257x768,4096x50304x768,1x50257x768,1x50304x768 2>> "$OUT/logs/peers.err"; echo "gemm peers: exit $?")
  } 2>&1 | tee "$OUT/unaligned.txt"
  pack
}
decode64() {
  {
  for round in 1 2; do
    gemm "r${round}_decode64_auto" 64 4096 4096 bfloat16
    for launch in 32:8 32:16 64:8; do for split in 1 2; do  # (64 columns on 16 warps take 256 KiB)
      IFS=: read -r columns warps <<< "$launch"
      gemm "r${round}_decode64_tensor_${columns}_${warps}_$split" 64 4096 4096 bfloat16 \
        --set "launch={\"rung\":\"stream\",\"cores\":\"tensor\",\"tile_n\":$columns,\"warps_n\":$warps,\"split_k\":$split}"
    done; done
  done
  (cd bench/peers && timeout 60 python3 gemm_peers.py --no-fp32 --tools cublas,cublaslt_bias --shapes 64x4096x4096 \
    2>> "$OUT/logs/peers.err"; echo "gemm peers: exit $?")
  } 2>&1 | tee "$OUT/decode64.txt"
  pack
}
for section in "$@"; do "$section"; done
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
