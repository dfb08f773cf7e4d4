#!/usr/bin/env bash
# Usage: command.sh [SECTION...] (odd wait_limit decode persistent; all four unless named)
# The GPU tests "attention verifies at odd shapes…" and "persistent attention blocks…" ran
# together on 2026-12-07 (narrow-decode/third) and printed nothing in 400 s: a case that does not
# finish, or one far slower than the rest. Here the odd shapes' 72 cases as one `kjit run` each
# (four at a time), 20 s apiece, so that one that hangs is named and costs 20 s; then the persistent test alone.
# Between them, the thin rule's split in 4 (32 × 1024 × 8192) at the defaults beside cuBLASLt, and
# the new wait limit's GPU test (a kernel that never ends: kjit gives up and its process ends).
# What a call cut short has written to $OUT comes back: the most wanted runs first.
set -uo pipefail
source bench/gemm_call.sh
odd_point() {  # four at a time: verification, not timing
  local start=$SECONDS
  LIMIT=20 point "$@" --set measure.warmup=1 --set measure.repeat=3
  echo "  $1 took $((SECONDS - start)) s"
}
odd() {
{
turn=0
for tokens in 1 17 1000 4097; do
  for dim in 64 96 128; do
    ratios=(1 4 8); ratio=${ratios[$((turn++ % 3))]}
    dtype=bfloat16; [ "$dim" = 96 ] && dtype=float16
    for score in x "col > row ? -inf : x"; do
      causal=plain; [ "$score" = x ] || causal=causal
      for variant in mma wgmma separate; do
        opts=(--set "dtype=$dtype")
        if [ $variant = separate ]; then opts+=(--set fusion=separate --set 'launch={}')
        else opts+=(--set fusion=fused --set "launch={\"rung\":\"$variant\"}"); fi
        odd_point "odd_${tokens}_${dim}_${ratio}_${causal}_${variant}" "$tokens" "$dim" 2 8 $((8 / ratio)) "$score" "${opts[@]}" &
        (( $(jobs -rp | wc -l) >= 4 )) && wait -n
      done
    done
  done
done
wait
} 2>&1 | tee "$OUT/odd.txt"
pack
}
wait_limit() { gpu_tests "a kernel that never ends*" 90; pack; }
# The same as kjit alone (no test build): the elementwise template with a loop that never ends.
wait_limit_cli() {
  local templates
  templates=$(mktemp -d)
  cp -r kernel_templates "$templates/"
  sed -i 's|^    long long kjit_done = 0;|    for (;;) __nanosleep(1000);  // never ends\n&|' "$templates/kernel_templates/elementwise.cu.mustache"
  SECONDS=0
  KJIT_GPU_WAIT_LIMIT=2 timeout 60 "$kjit" run --no-cache --templates "$templates/kernel_templates" > "$OUT/logs/wait_limit.txt" 2>&1
  echo "wait_limit_cli: exit $? after $SECONDS s; $(grep -c 'never ends' "$templates/kernel_templates/elementwise.cu.mustache") loop; $(grep -m1 'did not finish' "$OUT/logs/wait_limit.txt")" | tee "$OUT/wait_limit.txt"
  pack
}
decode() {
{
for round in 1 2; do gemm "r${round}_32x1024x8192_default" 32 1024 8192 bfloat16; done
python3 bench/peers/gemm_peers.py --shapes 32x1024x8192 --tools cublaslt_bias --no-fp32 --repeat 20 2> "$OUT/logs/peers.err"
} 2>&1 | tee "$OUT/decode.txt"
pack
}
persistent() { gpu_tests "persistent attention blocks*" 120; pack; }
sections=("$@")
[ $# -gt 0 ] || sections=(odd wait_limit decode persistent)
for section in "${sections[@]}"; do "$section"; done
