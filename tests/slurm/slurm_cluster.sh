# A single-node Slurm (Debian's slurm-wlm and munge) for the tests, sourced by them: start_slurm
# makes a private folder ($work, removed at exit) with its own munge key and socket, ports, state
# and logs — nothing of the machine's — and starts munged, slurmctld and slurmd there;
# wait_for_job ID waits until a job has left the queue. Missing tools fail the test, saying so.

start_slurm() {
    for tool in munged slurmctld slurmd sbatch squeue sinfo; do
        command -v "$tool" > /dev/null || { echo "slurm test: $tool is missing (scripts/setup.sh --test installs slurm-wlm)" >&2; exit 1; }
    done
    work=$(mktemp -d /tmp/kjit-slurm.XXXXXX)
    trap stop_slurm EXIT
    mkdir -p "$work/munge" "$work/state" "$work/spool"
    dd if=/dev/urandom of="$work/munge/key" bs=1024 count=1 status=none
    chmod 700 "$work/munge"
    chmod 600 "$work/munge/key"
    munged --force --socket="$work/munge/socket" --key-file="$work/munge/key" --pid-file="$work/munge.pid" \
           --log-file="$work/munge/log" --seed-file="$work/munge/seed"
    node=$(hostname -s)
    local port=$((20000 + RANDOM % 20000)) user
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
    for _ in $(seq 30); do sinfo -h -o %t 2> /dev/null | grep -q idle && return 0; sleep 1; done
    echo "slurm test: the node did not come up"
    tail -5 "$work"/slurm*.log
    exit 1
}

stop_slurm() {
    for pid in "$work"/*.pid; do [ -f "$pid" ] && kill "$(cat "$pid")" 2> /dev/null || true; done
    sleep 1
    rm -rf "$work"
}

wait_for_job() {
    for _ in $(seq 300); do [ -z "$(squeue -h -j "$1" 2> /dev/null)" ] && return 0; sleep 1; done
    echo "slurm test: job $1 still queued after 300 s"
    exit 1
}
