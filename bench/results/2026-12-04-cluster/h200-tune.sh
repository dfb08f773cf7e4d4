#!/usr/bin/env bash
# Issue 45's tune on one H200: configs/tune_softmax.json (384 points) searched by `kjit tune`, by
# kjit.tune in Python, and by kjit.tune(ray=True) on a local Ray cluster of one GPU worker (the
# search and the database in the driver); the Ray sweep again with the workers' compile threads.
set -uo pipefail
exec > >(tee "$OUT/log-tune.txt") 2>&1
. "$(dirname "$0")/build.sh" kjit _kjit
config=configs/tune_softmax.json
build-gpu/kjit tune $config --strategy genetic --budget 48 --seed 7 --cache-dir /tmp/cache-cli --json $OUT/tune_cli.json --quiet
python3 - $config <<'PY'
import sys, time, ray, kjit
config = sys.argv[1]
start = time.perf_counter()
local = kjit.tune(config, strategy="genetic", budget=48, seed=7, cache_dir="/tmp/cache-python")
print(f"kjit.tune (one machine): {len(local)} points in {time.perf_counter() - start:.1f} s")
print(local.attrs["summary"])
ray.init(num_gpus=1, include_dashboard=False, log_to_driver=False)
start = time.perf_counter()
remote = kjit.tune(config, strategy="genetic", budget=48, seed=7, cache_dir="/tmp/cache-ray", ray=True)
print(f"kjit.tune(ray=True): {len(remote)} points in {time.perf_counter() - start:.1f} s; from {remote['from'].value_counts().to_dict()}")
print(remote.attrs["summary"])
same_points = list(local["point"]) == list(remote["point"])
print(f"the same points in the same order as kjit.tune on one machine: {same_points}")
gaps = sorted(abs(a - b) / a for a, b in zip(local["ms"], remote["ms"]) if a == a and b == b)
print(f"their times: median |Δ| {100 * gaps[len(gaps) // 2]:.2f} %, max {100 * gaps[-1]:.2f} %")
again = kjit.tune(config, strategy="genetic", budget=48, seed=7, cache_dir="/tmp/cache-ray", ray=True)
print(f"again on the cluster: from {again['from'].value_counts().to_dict()}")
import os
print("tuning records in the driver's cache:", len(os.listdir("/tmp/cache-ray/tune")))
frame = kjit.Session(cache_dir="/tmp/cache-ray").sweep("configs/sweep_hidden_layer.json", ray=True, progress=False)
print(f"ray sweep: {len(frame)} rows, status {frame['status'].value_counts().to_dict()}")
remote.to_json(os.environ["OUT"] + "/tune_ray.json", orient="records")
local.to_json(os.environ["OUT"] + "/tune_python.json", orient="records")
PY
