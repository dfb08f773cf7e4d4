#!/usr/bin/env bash
# Issue 40 and 43, the session's last call (little device time left): main as it lands, kjit
# alone built. The row configs at the defaults over 1024 rows of 128,256 bfloat16 (layer norm now
# in one group of copies) and at odd shapes in groups; the shipped attention configs, whose tile
# tests the policy now carries from resolve to the plan. Every run verifies.
source bench/attention_call.sh   # build, $kjit, pack
rows() {
  local name=$1 cfg=$2 shape=$3; shift 3
  timeout 30 "$kjit" run "configs/$cfg" --skip-ceiling --set dtype=bfloat16 --set "shape=$shape" "$@" \
    --json "$OUT/logs/$name.json" > "$OUT/logs/$name.txt" 2>&1
  echo "$name: exit $? $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); r=r[0] if isinstance(r,list) else r; print(r.get("status"), "cold_us", round(1000*(r.get("kernel_cold_median_ms") or 0),1), r.get("variant"))' "$OUT/logs/$name.json" 2>/dev/null || tail -2 "$OUT/logs/$name.txt")"
}
for cfg in softmax rmsnorm layernorm; do
  rows "${cfg}_128256" $cfg.json "[1024,128256]"
  rows "${cfg}_odd_cluster" $cfg.json "[3,70001]" --set launch.copy_groups=5
  rows "${cfg}_odd_block" $cfg.json "[1000,4097]" --set 'launch.row_cache="shared"' --set launch.copy_groups=3
done 2>&1 | tee "$OUT/rows.txt"
for cfg in attention attention_causal attention_documents attention_gated; do
  timeout 60 "$kjit" run configs/$cfg.json --skip-ceiling --set measure.repeat=3 --json "$OUT/logs/$cfg.json" > "$OUT/logs/$cfg.txt" 2>&1
  echo "$cfg: exit $? $(grep -E "check|kernel" "$OUT/logs/$cfg.txt" | head -2 | tr -s ' ' | tr '\n' ' ')"
done 2>&1 | tee "$OUT/attention.txt"
pack
