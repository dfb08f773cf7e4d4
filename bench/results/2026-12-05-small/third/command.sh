#!/usr/bin/env bash
# Issue 40, small transposes: torch.compile's transpose of 4096 × 768 bfloat16 ran at 6.9 µs where
# a copy took 8.2 and kjit 8.0 (…/second). What Inductor generates for it (its Triton source and
# launch), then kjit at the defaults beside both peers at other small and medium shapes of real
# models, two rounds.
set -uo pipefail
source bench/attention_call.sh   # build, $kjit, pack
python3 - > "$OUT/logs/inductor_transpose.txt" 2>&1 <<'PY'
import os, torch, glob
os.environ["TORCH_LOGS"] = "output_code"
import torch._logging
torch._logging.set_logs(output_code=True)
x = torch.randn(4096, 768, device="cuda", dtype=torch.bfloat16)
f = torch.compile(lambda t: t.t().contiguous())
y = f(x); torch.cuda.synchronize()
print("ok", y.shape, y.stride())
PY
grep -n -E "def triton|XBLOCK|YBLOCK|num_warps|grid|tl.load|tl.store|xnumel|ynumel" "$OUT/logs/inductor_transpose.txt" | head -60 | tee "$OUT/inductor.txt"
for round in 1 2; do
  for shape in 4096x768 4096x1024 2048x2048 8192x768 768x4096 4096x2048 1024x4096; do
    n=${shape%x*}; c=${shape#*x}
    timeout 60 "$kjit" run configs/transpose.json --skip-ceiling --set dtype=bfloat16 --set "shape=[$n,$c]" \
      --json "$OUT/logs/r${round}_$shape.json" > "$OUT/logs/r${round}_$shape.txt" 2>&1
    echo "r${round}_$shape: exit $? $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))[0]; print(r.get("status"), "cold_us", round(1000*r["kernel_cold_median_ms"],2), r.get("variant"))' "$OUT/logs/r${round}_$shape.json" 2>/dev/null)"
  done
done 2>&1 | tee "$OUT/transposes.txt"
(cd bench/peers && python3 transpose_peers.py --shapes 4096x768,4096x1024,2048x2048,8192x768,768x4096,4096x2048,1024x4096 --dtypes bfloat16 2>/dev/null) | python3 -c '
import json,sys
for l in sys.stdin:
    r=json.loads(l); print(r["tool"], r["rows"], r["cols"], round(1000*r["median_ms"],2))' | tee "$OUT/peers.txt"
pack
