#!/usr/bin/env bash
# The last build of this session on one H200: the GPU tests; a Ray sweep reading each point's
# counters; `kjit tune --dry-run` compiling a space, then the tune on the GPU compiling nothing.
set -uo pipefail
exec > >(tee "$OUT/log-final.txt") 2>&1
. "$(dirname "$0")/build.sh" kjit gpu_tests _kjit
build-gpu/tests/gpu_tests 2>&1 | tail -3
python3 - <<'PY'
import ray, kjit
ray.init(num_gpus=1, include_dashboard=False, log_to_driver=False)
frame = kjit.Session(cache_dir="/tmp/cache-final").sweep("configs/sweep_hidden_layer.json", ray=True, metrics="memory",
                                                         progress=False)
print(f"ray sweep with counters: {len(frame)} rows, status {frame['status'].value_counts().to_dict()}; "
      f"{sum(c.startswith('metric_') for c in frame.columns)} metric columns")
ratio = frame["dram_bytes_over_model"]
print(f"DRAM bytes over the model's, per point: median {ratio.median():.3f}, min {ratio.min():.3f}, max {ratio.max():.3f}")
PY
build-gpu/kjit tune configs/tune_softmax.json --dry-run --cache-dir /tmp/cache-final
build-gpu/kjit cache stats --cache-dir /tmp/cache-final
build-gpu/kjit tune configs/tune_softmax.json --strategy random --budget 32 --cache-dir /tmp/cache-final --quiet | head -4
build-gpu/kjit cache stats --cache-dir /tmp/cache-final   # the same entries: the tune compiled nothing
