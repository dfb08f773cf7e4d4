#!/usr/bin/env bash
# Issue 40, small rows and transposes (where PyTorch was ahead at 4096 × 768 on the H200): layer
# and RMS norm at the hidden sizes of GPT-2 (768), BERT-large (1024) and a 1B model (2048) at
# 4096 tokens, and 768 at 16,384, on a block per row (the default, and 128) beside a warp per row
# in blocks of 32-512 (new: several rows a block, each reduced by its warp's shuffles alone);
# transposes of 4096 × 768 and 4096² over tiles and blocks; the peers in the same call; two
# rounds alternated. Then decode steps (M = 1, 16, 64 of 4096 × 4096 + bias) with the split's
# partials passed only for the rows of C and loaded 8 at a time, beside the templates before
# (.deps/old-templates) and cuBLASLt, three rounds. Last, the long rows at the defaults beside a copy.
set -uo pipefail
source bench/attention_call.sh   # build, $kjit, pack
run1() {  # NAME CONFIG ROWS COLS [kjit run options]
  local name=$1 cfg=$2 nrows=$3 cols=$4; shift 4
  timeout 60 "$kjit" run "configs/$cfg" --skip-ceiling --set dtype=bfloat16 --set "shape=[$nrows,$cols]" "$@" \
    --json "$OUT/logs/$name.json" > "$OUT/logs/$name.txt" 2>&1
  echo "$name: exit $? $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); r=r[0] if isinstance(r,list) else r; print(r.get("status"), "cold_us", round(1000*(r.get("kernel_cold_median_ms") or 0),2), "regs", r.get("registers"), r.get("variant"))' "$OUT/logs/$name.json" 2>/dev/null || tail -2 "$OUT/logs/$name.txt")"
}
for round in 1 2; do
  for shape in 4096x768 4096x1024 4096x2048 16384x768; do
    n=${shape%x*}; c=${shape#*x}
    for cfg in rmsnorm layernorm; do
      run1 "r${round}_${cfg}_${shape}_default" $cfg.json $n $c
      run1 "r${round}_${cfg}_${shape}_block128" $cfg.json $n $c --set launch.block=128
      cache=values; [ $c -gt 1024 ] && cache=shared
      for b in 32 64 128 256 512; do
        run1 "r${round}_${cfg}_${shape}_warp$b" $cfg.json $n $c --set 'launch.row_mapping="warp"' --set launch.block=$b --set "launch.row_cache=\"$cache\""
      done
    done
  done
  for shape in 4096x768 4096x4096; do
    n=${shape%x*}; c=${shape#*x}
    for b in 32 64 128; do
      run1 "r${round}_transpose_${shape}_t32_b$b" transpose.json $n $c --set launch.tile=32 --set launch.block=$b
    done
    for b in 64 128 256 512; do
      run1 "r${round}_transpose_${shape}_t64_b$b" transpose.json $n $c --set launch.tile=64 --set launch.block=$b
    done
    run1 "r${round}_transpose_${shape}_default" transpose.json $n $c
  done
  pack
done 2>&1 | tee "$OUT/rows.txt"
(cd bench/peers && python3 row_peers.py --shapes 4096x768,4096x1024,4096x2048,16384x768 --dtypes bfloat16 --ops layernorm,rmsnorm > "$OUT/logs/row_peers.jsonl" 2>"$OUT/logs/row_peers.err"
 python3 transpose_peers.py --shapes 4096x768,4096x4096 --dtypes bfloat16 > "$OUT/logs/transpose_peers.jsonl" 2>"$OUT/logs/transpose_peers.err")
cat "$OUT/logs/row_peers.jsonl" "$OUT/logs/transpose_peers.jsonl" | python3 -c '
import json,sys
for l in sys.stdin:
    r=json.loads(l); print(r["op"], r["tool"], r["rows"], r["cols"], round(1000*r["median_ms"],2))' | tee "$OUT/peers.txt"
pack
gemm1() {  # NAME M [kjit run options]
  local name=$1 m=$2; shift 2
  run1 "$name" mlp_layer.json $m 4096 --set 'inputs.W.shape=[4096,4096]' \
    --set 'stages=[{"op":"matmul","input":"x_in","by":"W"},{"op":"bias","by":"b"}]' "$@"
}
for round in 1 2 3; do for m in 1 16 64; do
  gemm1 "r${round}_decode_m${m}_new" $m
  gemm1 "r${round}_decode_m${m}_old" $m --templates .deps/old-templates/kernel_templates
done; done 2>&1 | tee "$OUT/decode.txt"
(cd bench/peers && python3 gemm_peers.py --shapes 1x4096x4096,16x4096x4096,64x4096x4096 --compile-mode default --no-fp32 \
   --tools cublas,cublaslt_bias 2>/dev/null) | python3 -c '
import json,sys
for l in sys.stdin:
    r=json.loads(l); print(r["tool"], r["m"], r["n"], r["k"], round(1000*(r.get("median_ms") or 0),2))' | tee -a "$OUT/decode.txt"
pack
for cols in 128256 50257; do for cfg in softmax rmsnorm layernorm; do
  run1 "long_${cfg}_${cols}" $cfg.json 1024 $cols
done; done 2>&1 | tee "$OUT/long.txt"
(cd bench/peers && python3 row_peers.py --shapes 1024x128256,1024x50257 --dtypes bfloat16 --ops softmax --repeat 20 2>/dev/null | grep '"copy"\|torch_eager') | tee -a "$OUT/long.txt"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
pack
