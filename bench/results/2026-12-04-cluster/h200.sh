#!/usr/bin/env bash
# Issue 45 on one H200: configs/sweep_hidden_layer.json swept by `kjit sweep` twice (the second
# is the noise floor) and by Session.sweep(ray=True) on a local Ray cluster of one GPU worker;
# a cache exported, imported into a fresh folder and serving the sweep; the GPU tests.
# Run from the repository root on the GPU machine with .deps and .whl carried; logs go to $OUT.
set -uo pipefail
log=$OUT/log.txt
exec > >(tee "$log") 2>&1
. "$(dirname "$0")/build.sh" kjit gpu_tests _kjit
kjit=build-gpu/kjit
cache=/tmp/kjit-cache
config=configs/sweep_hidden_layer.json
$kjit sweep $config --cache-dir $cache --json $OUT/local_a.json --quiet | tail -2
$kjit sweep $config --cache-dir $cache --json $OUT/local_b.json --quiet | tail -2
python3 - $config $cache $OUT/ray.json <<'PY'
import sys, time, ray, kjit
ray.init(num_gpus=1, include_dashboard=False, log_to_driver=False)
start = time.perf_counter()
frame = kjit.Session(cache_dir=sys.argv[2]).sweep(sys.argv[1], ray=True, out=sys.argv[3], progress=False)
print(f"ray sweep: {len(frame)} rows in {time.perf_counter() - start:.1f} s; status {frame['status'].value_counts().to_dict()};"
      f" hosts {sorted(set(frame['host']))}; GPUs {sorted(set(frame['device_name']))}")
PY
python3 - $OUT/local_a.json $OUT/local_b.json $OUT/ray.json <<'PY'
import json, statistics, sys
a, b, r = ([json.load(open(p)) for p in sys.argv[1:4]])
key = "kernel_cold_median_ms"
assert [x["sweep_index"] for x in r] == list(range(len(a))), "every point once, in order"
same = all(x[c] == y[c] for x, y in zip(a, r) for c in ("sweep_point", "variant", "cache_key", "status"))
print(f"{len(a)} points; ray rows name the same points, variants, sources and outcomes as kjit sweep: {same}")
def rel(x, y):
    return [abs(p[key] - q[key]) / p[key] for p, q in zip(x, y)]
noise, ray_gap = rel(a, b), rel(a, r)
for name, gaps in (("kjit sweep vs kjit sweep (noise)", noise), ("kjit sweep vs ray sweep", ray_gap)):
    gaps = sorted(gaps)
    print(f"{name}: median |Δ| {100 * statistics.median(gaps):.2f} %, p90 {100 * gaps[int(0.9 * len(gaps))]:.2f} %, max {100 * gaps[-1]:.2f} %")
PY
# A shipped cache: exported here, imported into a fresh folder, serving the sweep with no compile.
$kjit cache export /tmp/cache.kjit --cache-dir $cache
$kjit cache import /tmp/cache.kjit --cache-dir /tmp/fresh-cache
$kjit sweep $config --cache-dir /tmp/fresh-cache --quiet | tail -1
build-gpu/tests/gpu_tests 2>&1 | tail -3
cd $OUT && tar czf sweeps.tar.gz local_a.json local_b.json ray.json && rm local_a.json local_b.json ray.json
