#!/usr/bin/env bash
# At the session's last code: "auto" takes persistent blocks at head dim 64 up to 8,192 keys
# without a skipping mask. The odd shapes at head dim 64 and 96 on it (S ∈ {1, 17, 1000, 4097},
# grouped-query ratios 1, 4, 8, bfloat16 and float16), the head dim 64 grid at the defaults beside
# cuDNN, and every shipped config on the GPU.
source bench/attention_call.sh
cmake --build build-gpu --target gpu_tests -j "$(nproc)" >> "$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
for seq in 1 17 1000 4097; do for dim in 64 96; do for kv in 8 2 1; do for dtype in bfloat16 float16; do
  echo "$seq $dim $kv $dtype"
done; done; done; done | xargs -P 4 -L 1 bash -c 'LIMIT=30 point "odd_s${0}_d${1}_kv${2}_${3}" $0 $1 2 8 $2 x --set "dtype=\"$3\"" --set measure.repeat=3 --set measure.warmup=1' > "$OUT/odd.txt" 2>&1
echo "odd shapes failing: $(grep -vc 'exit 0 PASS' "$OUT/odd.txt") of $(wc -l < "$OUT/odd.txt")"; grep -v "exit 0 PASS" "$OUT/odd.txt" | head -20
grep -c "persistent" "$OUT"/logs/odd_s1000_d64_kv8_bfloat16.txt
{
for seq in 1024 4096 16384; do
  point "wgmma_s${seq}_d64_full" $seq 64 $((16384 / seq)) 32 32 x
  point "wgmma_s${seq}_d64_causal" $seq 64 $((16384 / seq)) 32 32 "col > row ? -inf : x"
done
} 2>&1 | tee "$OUT/points.txt"
(cd bench/peers && timeout 60 python3 attention_peers.py --repeat 10 --tools cudnn --grid 1024:64,4096:64,16384:64 > "$OUT/peers.jsonl" 2> "$OUT/logs/peers.err"; echo "peers: exit $?")
timeout 200 build-gpu/tests/gpu_tests -tc="every shipped config*" > "$OUT/logs/gpu_tests.log" 2>&1
{ echo "gpu_tests: exit $?"; tail -3 "$OUT/logs/gpu_tests.log"; grep -m5 -B8 -A12 "ERROR" "$OUT/logs/gpu_tests.log"; } | tee "$OUT/gpu_tests.txt"
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> "$OUT/env.txt"
pack
