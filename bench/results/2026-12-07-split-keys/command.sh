#!/usr/bin/env bash
# Usage: command.sh SECTION... (defaults attention modifiers masks decode decode_tiles decode_wave)
# The "done" figures of issues 40 and 43 on an H200, which no call has run since 2026-12-04:
#   defaults:  bench/defaults/run.py, every public shape of issue 40 at the defaults, $ROUNDS
#              rounds alternated (2 unless set), the peers in the same call, and its table;
#   attention: the FlashAttention-3 grid at the defaults (wgmma) and on the mma rung, causal and
#              not, with cuDNN and FlashAttention-2 in the same call;
#   modifiers: window (1024), ALiBi and soft-capping at 8k × 128 beside FlexAttention's, and the
#              plain kernel again beside them;
#   masks:     the GPU test of masks written with abs, max, min and chunks (their tile tests, added
#              2026-12-07 with no GPU), and at 8k × 128 a band and chunks beside the causal mask
#              written as a window: what skipping their tiles buys;
#   decode:    one query a head against a long cache (Llama 3 8B's heads: 32 over 8, head dim
#              128), kjit at the defaults (grouped heads packed, keys split among blocks), on the
#              wgmma rung (the default before), unsplit, unpacked and split 4 to 32 ways, beside
#              SDPA's backends and a same-size copy; first the GPU test of both;
#   decode_tiles: the decode points with tiles of 16, 32 and 128 keys (auto splits);
#   decode_wave: the decode points at the defaults once "auto" splits as one wave, two rounds,
#              and the peers again.
# Each section packs what it wrote, so a call cut short still brings back what it finished.
set -uo pipefail
source bench/attention_call.sh
causal="col > row ? -inf : x"
grid="1024:128 2048:128 4096:128 8192:128 16384:128 1024:64 4096:64 16384:64"
defaults() {
  timeout 420 python3 bench/defaults/run.py "$kjit" "$OUT/logs" --rounds "${ROUNDS:-2}" > "$OUT/logs/defaults.log" 2>&1; echo "defaults: exit $?"
  python3 scripts/defaults_table.py "$OUT/logs" | tee "$OUT/defaults_table.md"
  pack
}
grid_points() {  # NAME [kjit run options]
  local name=$1; shift
  for p in $grid; do
    seq=${p%:*}; dim=${p#*:}; batch=$((16384 / seq)); heads=$((2048 / dim))
    point "${name}_s${seq}_d${dim}_full" "$seq" "$dim" "$batch" "$heads" "$heads" x "$@"
    point "${name}_s${seq}_d${dim}_causal" "$seq" "$dim" "$batch" "$heads" "$heads" "$causal" "$@"
  done
}
attention() {
  { grid_points default; grid_points mma --set 'launch.rung="mma"'; } 2>&1 | tee "$OUT/grid.txt"
  pack
  (cd bench/peers && timeout 200 python3 attention_peers.py --repeat 10 --tools cudnn,flash > "$OUT/peers.jsonl" 2> "$OUT/logs/peers.err"; echo "peers: exit $?")
  pack
}
modifiers() {
  {
  point mod_plain 8192 128 2 16 16 x
  point mod_plain_causal 8192 128 2 16 16 "$causal"
  point mod_window 8192 128 2 16 16 "col > row || row - col >= 1024 ? -inf : x"
  point mod_softcap 8192 128 2 16 16 "30 * tanh(x / 30)"
  point mod_alibi 8192 128 2 16 16 "x + exp2(-8.0 * (head + 1) / 16) * (col - row)"
  } 2>&1 | tee "$OUT/modifiers.txt"
  cd bench/peers
  for m in alibi softcap; do
    timeout 60 python3 attention_peers.py --repeat 10 --tools flex --grid 8192:128 --causal no --modifier $m >> "$OUT/peers.jsonl" 2>> "$OUT/logs/peers.err"; echo "peers $m: exit $?"
  done
  timeout 60 python3 attention_peers.py --repeat 10 --tools flex --grid 8192:128 --causal yes --modifier window >> "$OUT/peers.jsonl" 2>> "$OUT/logs/peers.err"; echo "peers window: exit $?"
  cd - > /dev/null
  pack
}
masks() {
  gpu_tests "masks written with abs*"
  {
  point mask_causal_window 8192 128 2 16 16 "col > row || row - col >= 1024 ? -inf : x"
  point mask_band 8192 128 2 16 16 "abs(row - col) >= 1024 ? -inf : x"
  point mask_band_as_before 8192 128 2 16 16 "(row - col) * (row - col) >= 1048576 ? -inf : x"
  point mask_chunks 8192 128 2 16 16 "row // 1024 != col // 1024 ? -inf : x"
  point mask_chunks_causal 8192 128 2 16 16 "col > row || row // 1024 != col // 1024 ? -inf : x"
  } 2>&1 | tee "$OUT/masks.txt"
  pack
}
decode_point() {  # NAME BATCH HEADS KV_HEADS KEYS DIM [more kjit run options]
  local name=$1 batch=$2 heads=$3 kv=$4 keys=$5 dim=$6; shift 6
  timeout 40 "$kjit" run configs/attention.json --skip-ceiling --set "shape=[$((batch * heads)),$dim]" \
    --set "inputs.k.shape=[$((batch * kv * keys)),$dim]" --set "inputs.v.shape=[$((batch * kv * keys)),$dim]" \
    --set "stages[0].batch=$batch" --set "stages[0].heads=$heads" --set "stages[0].kv_heads=$kv" "$@" \
    --json "$OUT/logs/$name.json" > "$OUT/logs/$name.txt" 2>&1
  echo "$name: exit $? $(python3 "$record_line" "$OUT/logs/$name.json" status mismatches cold_ms policy || tail -3 "$OUT/logs/$name.txt")"
}
points="1:32:8:8192:128 1:32:8:32768:128 8:32:8:8192:128 32:32:8:4096:128"
decode() {
  gpu_tests "decoding packs*"
  for p in $points; do
    IFS=: read -r b h kv keys dim <<< "$p"
    decode_point "decode_b${b}_k${keys}" "$b" "$h" "$kv" "$keys" "$dim"
    decode_point "decode_b${b}_k${keys}_wgmma" "$b" "$h" "$kv" "$keys" "$dim" --set 'launch.rung="wgmma"' --set 'launch.pack_heads=false'
    decode_point "decode_b${b}_k${keys}_unsplit" "$b" "$h" "$kv" "$keys" "$dim" --set 'launch.splits=1'
    decode_point "decode_b${b}_k${keys}_unpacked" "$b" "$h" "$kv" "$keys" "$dim" --set 'launch.pack_heads=false'
    for s in ${SPLITS:-4 8 16 32}; do
      decode_point "decode_b${b}_k${keys}_s$s" "$b" "$h" "$kv" "$keys" "$dim" --set "launch.splits=$s"
    done
  done 2>&1 | tee "$OUT/decode.txt"
  (cd bench/peers && timeout 120 python3 decode_peers.py --points "${points// /,}" > "$OUT/decode_peers.jsonl" 2>> "$OUT/logs/peers.err"; echo "decode peers: exit $?")
  pack
}
decode_tiles() {  # the first decode call's blocks held 3 warps an SM: smaller tiles of keys, more blocks
  for p in $points; do
    IFS=: read -r b h kv keys dim <<< "$p"
    for n in 16 32 128; do
      decode_point "decode_b${b}_k${keys}_n$n" "$b" "$h" "$kv" "$keys" "$dim" --set "launch.block_n=$n"
    done
  done 2>&1 | tee "$OUT/decode_tiles.txt"
  pack
}
decode_wave() {  # "auto" splits as one wave of blocks: the decode points at the defaults, twice, and the peers
  for round in 1 2; do
    for p in $points; do
      IFS=: read -r b h kv keys dim <<< "$p"
      decode_point "decode_r${round}_b${b}_k${keys}" "$b" "$h" "$kv" "$keys" "$dim"
    done
  done 2>&1 | tee "$OUT/decode_wave.txt"
  (cd bench/peers && timeout 120 python3 decode_peers.py --tools cudnn,flash,copy --points "${points// /,}" > "$OUT/decode_peers.jsonl" 2>> "$OUT/logs/peers.err"; echo "decode peers: exit $?")
  pack
}
for section in "$@"; do "$section"; done
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
