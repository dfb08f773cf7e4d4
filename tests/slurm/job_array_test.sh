#!/usr/bin/env bash
# Issue 45's Slurm recipe, on a single-node Slurm (Debian's slurm-wlm) started here for the test:
# scripts/slurm-sweep.sh runs a compile-only sweep as a job array of 3 shards and merges them; the
# merged rows must be those of one `kjit sweep` in one process, each point once.
# usage: tests/slurm/job_array_test.sh KJIT_COMMAND
set -euo pipefail
kjit=$(realpath "$1")
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=slurm_cluster.sh
. "$source_dir/tests/slurm/slurm_cluster.sh"
start_slurm

# 12 points of 4 distinct sources, in 3 shards that compile into one cache at once.
python3 - "$source_dir/configs/hidden_layer.json" "$work/sweep.json" <<'PY'
import json, sys
config = json.load(open(sys.argv[1]))
config["sweep"] = {"launch.block": [128, 256, 512, 1024], "seed": [1, 2, 3]}
json.dump(config, open(sys.argv[2], "w"))
PY
mkdir "$work/sweep"
merge=$(KJIT="$kjit" "$source_dir/scripts/slurm-sweep.sh" --shards 3 --out "$work/sweep" "$work/sweep.json" \
        --compile-only --cache-dir "$work/cache" --quiet)
wait_for_job "$merge"
[ -f "$work/sweep/sweep.json" ] || { echo "slurm test: no merged sweep.json"; cat "$work"/sweep/*.log; exit 1; }
"$kjit" sweep "$work/sweep.json" --compile-only --cache-dir "$work/cache" --quiet --json "$work/one.json" > /dev/null
python3 - "$work/sweep/sweep.json" "$work/one.json" "$node" <<'PY'
import json, sys
merged, one = (json.load(open(path)) for path in sys.argv[1:3])
assert [r["sweep_index"] for r in merged] == list(range(12)), [r["sweep_index"] for r in merged]
for column in ("sweep_point", "variant", "cache_key", "status"):
    assert [r[column] for r in merged] == [r[column] for r in one], column
assert {r["host"] for r in merged} == {sys.argv[3]} or {r["host"].split(".")[0] for r in merged} == {sys.argv[3]}
print("slurm test: 3 shards of a job array, merged: the 12 rows of one sweep")
PY
