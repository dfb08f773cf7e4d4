#!/usr/bin/env bash
# Soft-capping with its constant factors folded first (issue 43: 8k × 128 beside the unmodified
# kernel and FlexAttention, odd shapes verified on both rungs, cold compiles); then shapes of
# other public models at kjit's defaults (bench/defaults/other_models.json: LLaMA-3-8B,
# Qwen2.5-7B, LLaMA-2-13B, GPT-2 medium, Phi-3-mini, Gemma's and StarCoder's vocabularies, decode
# steps of 1 to 128 rows), one round, the peers in the call; then `kjit tune` at some of the
# shapes, to see how far the defaults are from the best launch the family's space holds.
set -uo pipefail
source bench/gemm_call.sh
softcap='30 * tanh(x / 30)'
{
for rnd in 1 2; do
  point "r${rnd}_8k128_plain" 8192 128 2 16 16 x
  point "r${rnd}_8k128_softcap" 8192 128 2 16 16 "$softcap"
  point "r${rnd}_8k128_causal" 8192 128 2 16 16 "col > row ? -inf : x"
  point "r${rnd}_8k128_causal_softcap" 8192 128 2 16 16 "col > row ? -inf : $softcap"
done
point mma_8k128_softcap 8192 128 2 16 16 "$softcap" --set 'launch={"rung":"mma"}'
for rung in wgmma mma; do
  for seq in 17 1000 4097; do
    for dim in 64 128; do
      point "odd_${rung}_${seq}_${dim}" "$seq" "$dim" 2 8 2 "col > row ? -inf : $softcap" --set "launch={\"rung\":\"$rung\"}"
    done
  done
  point "odd_${rung}_1000_96_f16" 1000 96 2 8 8 "$softcap" --set dtype=float16 --set "launch={\"rung\":\"$rung\"}"
done
for config in attention attention_causal; do  # cold compiles (issue 43: ≤ 1 s a variant)
  "$kjit" compile configs/$config.json --no-cache 2>&1 | grep -E "compile|NVRTC|ptxas|total"
done
} 2>&1 | tee "$OUT/softcap.txt"
(cd bench/peers && timeout 120 python3 attention_peers.py --grid 8192:128 --causal both --tools flex --modifier softcap) \
  > "$OUT/logs/flex_softcap.jsonl" 2> "$OUT/logs/flex_softcap.err"; cat "$OUT/logs/flex_softcap.jsonl"
pack
timeout 300 python3 bench/defaults/run.py "$kjit" "$OUT/logs/defaults-run" --cases bench/defaults/other_models.json \
  --rounds 1 > "$OUT/logs/defaults.txt" 2>&1
echo "defaults: exit $?"
python3 scripts/defaults_table.py "$OUT/logs/defaults-run" --cases bench/defaults/other_models.json > "$OUT/table.md" 2>&1
cat "$OUT/table.md"
pack
matmul='stages=[{"op":"matmul","input":"x_in","by":"W"},{"op":"bias","by":"b"}]'
tune() {  # NAME CONFIG [options]: the tune's records into $OUT/logs/tune-NAME.json, its summary printed
  local name=$1 config=$2; shift 2
  timeout 100 "$kjit" tune "configs/$config" --set dtype=bfloat16 "$@" --json "$OUT/logs/tune-$name.json" \
    > "$OUT/logs/tune-$name.txt" 2>&1
  echo "tune $name: exit $?"; grep -E "fastest|default|best" "$OUT/logs/tune-$name.txt" | head -6
}
{
tune decode_m128 mlp_layer.json --set 'shape=[128,4096]' --set 'inputs.W.shape=[4096,4096]' --set "$matmul" --budget 24
tune transpose_4096x1024 transpose.json --set 'shape=[4096,1024]'
tune softmax_151936 softmax.json --set 'shape=[1024,151936]' --budget 16
} 2>&1 | tee "$OUT/tunes.txt"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
pack
