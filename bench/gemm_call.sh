# Sourced by a GPU call's command.sh for the GEMM family (bench/results/*/command.sh): what
# bench/attention_call.sh does (the GPU into $OUT/env.txt, kjit built in build-gpu, `pack`), and
#   gemm NAME M N K DTYPE [more kjit run options]
# which runs configs/mlp_layer.json's product + bias, M × K by K × N, into $OUT/logs/NAME.json and
# prints one line: its status, mismatches, cold median in µs, registers and variant.
source "$(dirname "${BASH_SOURCE[0]}")/attention_call.sh"
gemm() {
  local name=$1 m=$2 n=$3 k=$4 dtype=$5; shift 5
  timeout 60 "$kjit" run configs/mlp_layer.json --skip-ceiling --set dtype=$dtype --set "shape=[$m,$k]" \
    --set "inputs.W.shape=[$k,$n]" --set 'stages=[{"op":"matmul","input":"x_in","by":"W"},{"op":"bias","by":"b"}]' \
    "$@" --json "$OUT/logs/$name.json" > "$OUT/logs/$name.txt" 2>&1
  local rc=$?
  echo "$name: exit $rc $(python3 "$record_line" "$OUT/logs/$name.json" status mismatches cold_us regs variant error || tail -3 "$OUT/logs/$name.txt")"
  return $rc
}
