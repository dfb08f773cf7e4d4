#!/usr/bin/env bash
# Issue 45's Slurm recipe, on a single-node Slurm (Debian's slurm-wlm) started here for the test:
# scripts/slurm-sweep.sh runs a compile-only sweep as a job array of 3 shards and merges them; the
# merged rows must be those of one `kjit sweep` in one process, each point once.
# usage: tests/slurm/job_array_test.sh KJIT_COMMAND
set -euo pipefail
kjit=$(realpath "$1")
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
for tool in munged slurmctld slurmd sbatch squeue; do
    command -v "$tool" > /dev/null || { echo "slurm test: $tool is missing (scripts/setup.sh --test installs slurm-wlm)" >&2; exit 1; }
done
work=$(mktemp -d /tmp/kjit-slurm.XXXXXX)
stop() {
    for pid in "$work"/*.pid; do [ -f "$pid" ] && kill "$(cat "$pid")" 2> /dev/null || true; done
    sleep 1
    rm -rf "$work"
}
trap stop EXIT

# munge and Slurm with sockets, ports, state and logs of their own: nothing of the machine's is used.
mkdir -p "$work/munge" "$work/state" "$work/spool" "$work/sweep"
dd if=/dev/urandom of="$work/munge/key" bs=1024 count=1 status=none
chmod 700 "$work/munge"
chmod 600 "$work/munge/key"
munged --force --socket="$work/munge/socket" --key-file="$work/munge/key" --pid-file="$work/munge.pid" \
       --log-file="$work/munge/log" --seed-file="$work/munge/seed"
node=$(hostname -s)
port=$((20000 + RANDOM % 20000))
user=$(id -un)
cat > "$work/slurm.conf" <<CONF
ClusterName=kjit-test
SlurmctldHost=$node
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
AuthInfo=socket=$work/munge/socket
SlurmUser=$user
SlurmdUser=$user
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
NodeName=$node CPUs=$(nproc) State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$work/slurm.conf"
slurmctld
slurmd
for _ in $(seq 30); do sinfo -h -o %t 2> /dev/null | grep -q idle && break; sleep 1; done
sinfo -h -o %t | grep -q idle || { echo "slurm test: the node did not come up"; tail -5 "$work"/slurm*.log; exit 1; }

# 12 points of 4 distinct sources, in 3 shards that compile into one cache at once.
python3 - "$source_dir/configs/hidden_layer.json" "$work/sweep.json" <<'PY'
import json, sys
config = json.load(open(sys.argv[1]))
config["sweep"] = {"launch.block": [128, 256, 512, 1024], "seed": [1, 2, 3]}
json.dump(config, open(sys.argv[2], "w"))
PY
merge=$(KJIT="$kjit" "$source_dir/scripts/slurm-sweep.sh" --shards 3 --out "$work/sweep" "$work/sweep.json" \
        --compile-only --cache-dir "$work/cache" --quiet)
for _ in $(seq 300); do [ -z "$(squeue -h -j "$merge" 2> /dev/null)" ] && break; sleep 1; done
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
