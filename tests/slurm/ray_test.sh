#!/usr/bin/env bash
# scripts/slurm-ray.sbatch on a single-node Slurm (slurm_cluster.sh): a Ray cluster started
# inside the allocation, a compile-only sweep spread over it, every point written once by the driver.
# usage: tests/slurm/ray_test.sh PYTHON_BIN_DIR MODULE_DIR   (the venv with ray; the built kjit package)
set -euo pipefail
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=slurm_cluster.sh
. "$source_dir/tests/slurm/slurm_cluster.sh"
start_slurm
export PATH="$1:$PATH" PYTHONPATH="$2" RAY_AUTH_MODE=disabled
job=$(sbatch --parsable --nodes=1 --output="$work/ray.log" --export=ALL "$source_dir/scripts/slurm-ray.sbatch" \
      "$source_dir/configs/sweep_hidden_layer.json" "$work/rows.json" --compile-only)
wait_for_job "$job"
grep -q "kjit: 48 points on 1 nodes" "$work/ray.log" || { echo "slurm ray test: the driver did not finish"; cat "$work/ray.log"; exit 1; }
python3 - "$work/rows.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
assert [r["sweep_index"] for r in rows] == list(range(48)), [r["sweep_index"] for r in rows]
assert {r["status"] for r in rows} == {"ok"}, {r["status"] for r in rows}
print("slurm ray test: a Ray cluster inside one allocation swept 48 points, each written once")
PY
