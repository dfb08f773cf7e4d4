#!/usr/bin/env bash
# A kjit sweep as a Slurm job array: SHARDS tasks each run `kjit sweep --shard K/SHARDS` (any
# node, any GPU Slurm gives them), then one job, once every task has ended, checks that each
# shard wrote its file and joins them with `kjit merge` into OUT/sweep.json. Prints the merge
# job's id (for `squeue -j`, or `--dependency=afterok:ID`).
#
# usage: scripts/slurm-sweep.sh [--shards N] [--out DIR] [--sbatch "OPTIONS"] [--merge-sbatch "OPTIONS"]
#                                CONFIG [kjit sweep options]
#   --shards N              tasks in the array (default 4)
#   --out DIR               where the shards, their logs and sweep.json go (default ./kjit-sweep-<time>);
#                           on a file system every node sees
#   --sbatch OPTIONS        for each task of the array: --partition, --gres=gpu:1, --time, --account, …
#   --merge-sbatch OPTIONS  for the merge job (a CPU and a few seconds): --partition, --account, …
# e.g. scripts/slurm-sweep.sh --shards 8 --sbatch "--gres=gpu:1 --time=01:00:00" configs/sweep_softmax.json
# The kjit command is $KJIT (default: kjit on the PATH of the nodes).
set -euo pipefail
shards=4
out="kjit-sweep-$(date +%Y%m%d-%H%M%S)"
sbatch_options=""
merge_options=""
while [ $# -gt 0 ]; do
    case "$1" in
        --shards) shards="$2"; shift 2 ;;
        --out) out="$2"; shift 2 ;;
        --sbatch) sbatch_options="$2"; shift 2 ;;
        --merge-sbatch) merge_options="$2"; shift 2 ;;
        -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
        *) break ;;
    esac
done
if [ $# -lt 1 ]; then
    echo "slurm-sweep.sh: expected a config (see --help)" >&2
    exit 2
fi
if ! [[ "$shards" =~ ^[1-9][0-9]{0,5}$ ]]; then
    echo "slurm-sweep.sh: --shards $shards: expected a count from 1" >&2
    exit 2
fi
config=$(realpath "$1")
shift
kjit=${KJIT:-kjit}
mkdir -p "$out"
out=$(realpath "$out")
# Each task's own arguments, quoted for the shell the job runs in.
sweep_options=$(printf ' %q' "$@")

# shellcheck disable=SC2086  # the sbatch options are words the user wrote
array=$(sbatch --parsable --job-name=kjit-sweep --array="0-$((shards - 1))" $sbatch_options \
    --output="$out/shard-%a.log" \
    --wrap "$(printf '%q' "$kjit") sweep $(printf '%q' "$config") --shard \$SLURM_ARRAY_TASK_ID/$shards$sweep_options --json $(printf '%q' "$out")/shard-\$SLURM_ARRAY_TASK_ID.json")
array=${array%%;*}  # "ID;cluster" on a federation

# afterany: a shard whose points failed still wrote its rows (and exits 1); one that wrote no file
# (killed, out of time) is named here, and nothing is merged.
merge_script="cd $(printf '%q' "$out") && missing=''; for k in \$(seq 0 $((shards - 1))); do [ -f shard-\$k.json ] || missing=\"\$missing \$k\"; done; \
if [ -n \"\$missing\" ]; then echo \"kjit: shards without results:\$missing (see shard-K.log)\" >&2; exit 1; fi; \
$(printf '%q' "$kjit") merge shard-*.json --json sweep.json"
# shellcheck disable=SC2086
merge=$(sbatch --parsable --job-name=kjit-merge --dependency="afterany:$array" $merge_options \
    --output="$out/merge.log" --wrap "$merge_script")
echo "${merge%%;*}"
