#!/usr/bin/env bash
# Issue 43: the score modifiers at 8192 × 128 (batch 2, 16 heads) after ALiBi's positions became
# floats (a conversion a tile, not a score) and soft-capping's x / 30 a product, beside the
# unmodified kernel, two rounds; the separate kernels with ALiBi (verified); FlexAttention with the
# same modifiers and cuDNN unmodified in the same call. Then issue 40's decode steps with A's
# buffers holding x's rows alone (2 KiB beside W's 8 where they held 8 and 8): the rule's 8 buffers
# beside 12 and 16, more of W in flight, and cuBLASLt's addmm.
set -uo pipefail
source bench/attention_call.sh   # build, $kjit, point NAME SEQ DIM BATCH HEADS KV SCORE, pack
alibi="x + exp2(-8.0 * (head + 1) / 16) * (col - row)"
for round in 1 2; do
  point "r${round}_plain" 8192 128 2 16 16 "x"
  point "r${round}_alibi" 8192 128 2 16 16 "$alibi"
  point "r${round}_softcap" 8192 128 2 16 16 "30 * tanh(x / 30)"
  point "r${round}_window" 8192 128 2 16 16 "col > row || row - col >= 1024 ? -inf : x"
  point "r${round}_causal" 8192 128 2 16 16 "col > row ? -inf : x"
done 2>&1 | tee "$OUT/modifiers.txt"
{
point alibi_mma 8192 128 2 16 16 "$alibi" --set 'launch.rung="mma"'
point plain_mma 8192 128 2 16 16 "x" --set 'launch.rung="mma"'
point alibi_separate 4096 128 2 16 16 "$alibi" --set 'fusion="separate"'
point alibi_odd 1000 96 2 8 2 "$alibi"
point alibi_odd_fp16 4097 64 1 8 8 "$alibi" --set 'dtype="float16"'
point alibi_odd_separate 1000 64 2 8 2 "$alibi" --set 'fusion="separate"'
} 2>&1 | tee "$OUT/more.txt"
pack
cd bench/peers
timeout 90 python3 attention_peers.py --repeat 10 --tools cudnn --grid 8192:128 --causal both > "$OUT/peers.jsonl" 2> "$OUT/logs/peers.err"; echo "peers cudnn: exit $?"
for m in alibi softcap; do
  timeout 60 python3 attention_peers.py --repeat 10 --tools flex --grid 8192:128 --causal no --modifier $m >> "$OUT/peers.jsonl" 2>> "$OUT/logs/peers.err"; echo "peers $m: exit $?"
done
timeout 60 python3 attention_peers.py --repeat 10 --tools flex --grid 8192:128 --causal yes --modifier window >> "$OUT/peers.jsonl" 2>> "$OUT/logs/peers.err"; echo "peers window: exit $?"
cd - > /dev/null
python3 - "$OUT/peers.jsonl" <<'PY' | tee "$OUT/peers.txt"
import json, sys
for line in open(sys.argv[1]):
    p = json.loads(line)
    print(p["seq"], p["head_dim"], "causal" if p["causal"] else "full", p.get("modifier"), p["tool"], round(p.get("tflops", 0)), p.get("median_ms"), p.get("first_call_s", ""), p.get("error", ""))
PY
product() {  # M N K tag [--set lines]: a product + bias at the defaults but for the --set lines
  local m=$1 n=$2 k=$3 tag=$4; shift 4
  timeout 40 "$kjit" run configs/mlp_layer.json --set dtype=bfloat16 --set "shape=[$m,$k]" --set "inputs.W.shape=[$k,$n]" \
    --set 'stages=[{"op":"matmul","input":"x_in","by":"W"},{"op":"bias","by":"b"}]' "$@" \
    --set measure.repeat=20 --set measure.max_ms=200 --skip-ceiling --json "$OUT/logs/p_${m}x${n}x${k}_$tag.json" >> "$OUT/logs/products.log" 2>&1
  echo "${m}x${n}x${k} $tag: exit $? $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))[0]; v=r.get("variant",""); print(r.get("status"), round(1000*r.get("kernel_cold_median_ms",0),1), "us", v[v.find("buffers="):v.find("buffers=")+10])' "$OUT/logs/p_${m}x${n}x${k}_$tag.json" 2>/dev/null)"
}
split='launch={"rung":"wgmma","tile_m":64,"tile_n":64,"schedule":"pingpong","split_k":2,"buffers":'
for round in 1 2; do
  for mnk in 1x4096x4096 16x4096x4096 64x4096x4096; do
    IFS=x read -r m n k <<< "$mnk"
    product $m $n $k "r${round}_auto"
    product $m $n $k "r${round}_b12" --set "${split}12}"
    product $m $n $k "r${round}_b16" --set "${split}16}"
  done
  product 8 5120 5120 "r${round}_auto"
  product 8 5120 5120 "r${round}_b16" --set 'launch={"rung":"wgmma","tile_m":64,"tile_n":64,"schedule":"pingpong","buffers":16}'
done 2>&1 | tee "$OUT/decode.txt"
timeout 60 python3 bench/peers/gemm_peers.py --no-fp32 --tools cublaslt_bias --shapes 1x4096x4096,16x4096x4096,64x4096x4096,8x5120x5120 \
    2>> "$OUT/logs/gemm_peers.err" | python3 -c '
import json,sys
for l in sys.stdin:
    p=json.loads(l); print("peer", p["tool"], p["m"], p["n"], p["k"], round(1000*p["median_ms"],1), "us")' | tee -a "$OUT/decode.txt"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
pack
