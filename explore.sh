#!/usr/bin/env bash
# ad-hoc: block and formula exploration for row kernels (not committed)
k=$PWD/build-gpu/kjit
export KJIT_CACHE_DIR=/tmp/kjit-gpu-cache
for combo in "4096,4096 float32 [128,256,512,1024]" "4096,4096 bfloat16 [128,256,512]" "32768,1024 float32 [32,64,128,256]" \
             "32768,1024 bfloat16 [32,64,128]" "1024,32768 float32 [1024]" "1024,32768 bfloat16 [1024]"; do
  read -r shape dtype blocks <<< "$combo"
  $k sweep configs/softmax.json --set "shape=[$shape]" --set dtype=$dtype \
     --set "sweep={\"launch.block\":$blocks,\"stages[3].expr\":[\"x / s\",\"x * (1 / s)\"]}" --quiet --json $OUT/x_${shape/,/x}_$dtype.json 2>&1 | tail -1
done
python3 - $OUT <<'PY'
import json,glob,sys
for f in sorted(glob.glob(sys.argv[1]+"/x_*.json")):
    rs=json.load(open(f)); rs = rs if isinstance(rs,list) else rs["records"]
    for r in rs: print(f.split("/")[-1][2:-5], r["sweep_point"], r["registers"], r["blocks_per_sm"], round(r["kernel_cold_median_ms"]*1e3,1), round(r["percent_of_ceiling"],1), r["status"])
PY
