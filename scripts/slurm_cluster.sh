#!/usr/bin/env bash
# A single-node SLURM cluster on this machine, for testing the workflow's SLURM path
# (profiles/slurm, tests/test_slurm.py). Debian's packages; run as root.
#
# Usage:  scripts/slurm_cluster.sh install|start|stop|status|env
#   install  apt-get install munge slurmctld slurmd slurm-client (apt-get update first)
#   start    write slurm.conf for one node with this machine's cores (nproc) and memory (free),
#            start munged, slurmctld and slurmd, record their process ids, wait for the node
#   stop     cancel this cluster's jobs, stop the three daemons by their recorded ids, remove
#            the state folder and the /etc/slurm/slurm.conf link this script made
#   status   the daemons' ids and whether they run; sinfo
#   env      the line to eval before sbatch/squeue/snakemake: export SLURM_CONF=...
# Idempotent: start on a running cluster and stop on a stopped one do nothing.
#
# Everything lives in $RFL_SLURM_STATE (default /tmp/rfl_slurm): slurm.conf, the munge key and
# socket, spool and state folders, logs, pid files. No accounting (slurmdbd, MariaDB): the
# workflow's profile reads job states with squeue (--slurm-status-command squeue), which sees
# finished jobs for MinJobAge (set here to 600 s, above the plugin's 3 x 40 s threshold).
# Client commands inside a job (the plugin's srun) read /etc/slurm/slurm.conf whatever
# SLURM_CONF says (the plugin drops SLURM_* variables), so start links it to the state's file
# when no slurm.conf is there, and stop removes the link it made (never a file it did not).
set -euo pipefail

STATE="${RFL_SLURM_STATE:-/tmp/rfl_slurm}"
CONF="$STATE/slurm.conf"
ETC_CONF=/etc/slurm/slurm.conf
PARTITION="${RFL_SLURM_PARTITION:-debug}"
MAXTIME="${RFL_SLURM_MAXTIME:-120}"          # minutes: the partition's time limit
CTLD_PORT="${RFL_SLURM_CTLD_PORT:-6817}"
SLURMD_PORT="${RFL_SLURM_SLURMD_PORT:-6818}"
NODE="$(hostname -s)"
DAEMONS=(munged slurmctld slurmd)

die() { echo "slurm_cluster: $*" >&2; exit 2; }

alive() {   # pid file -> 0 if its process runs
    [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null
}

cmd_install() {
    [ "$(id -u)" = 0 ] || die "install needs root (apt-get)"
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        munge slurmctld slurmd slurm-client
}

write_conf() {
    local cpus mem
    cpus=$(nproc)
    mem=$(free -m | awk '/^Mem:/ {print $2}')
    cat > "$CONF" <<EOF
# written by scripts/slurm_cluster.sh: one node, this machine's $cpus cores and $mem MB
ClusterName=rfl
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$STATE/munge/munge.socket
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/slurmd
SlurmctldPidFile=$STATE/slurmctld.daemon.pid
SlurmdPidFile=$STATE/slurmd.daemon.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MinJobAge=600
ReturnToService=2
SlurmdTimeout=300
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=$PARTITION Nodes=$NODE Default=YES MaxTime=$MAXTIME State=UP
EOF
}

cmd_start() {
    [ "$(id -u)" = 0 ] || die "start needs root (the daemons run as root here)"
    for exe in munged slurmctld slurmd sinfo; do
        command -v "$exe" > /dev/null || die "$exe not found; run: $0 install"
    done
    if alive "$STATE/slurmctld.pid" && alive "$STATE/slurmd.pid" && alive "$STATE/munged.pid"; then
        echo "slurm_cluster: already running ($STATE)"; return 0
    fi
    cmd_stop quiet                                      # a half-started cluster: clean first
    mkdir -p "$STATE"/{munge,ctld,slurmd,log}
    chmod 700 "$STATE" "$STATE/munge"
    dd if=/dev/urandom of="$STATE/munge.key" bs=1024 count=1 status=none
    chmod 400 "$STATE/munge.key"
    write_conf
    if [ ! -e "$ETC_CONF" ]; then
        mkdir -p "$(dirname "$ETC_CONF")"
        ln -s "$CONF" "$ETC_CONF" && echo "$ETC_CONF" > "$STATE/etc_link"
    elif [ "$(readlink "$ETC_CONF" || true)" != "$CONF" ]; then
        die "$ETC_CONF exists and is not this script's; jobs' srun would read it. Move it away or use that cluster."
    fi
    export SLURM_CONF="$CONF"
    setsid munged --foreground --force --key-file="$STATE/munge.key" --socket="$STATE/munge/munge.socket" \
        --pid-file="$STATE/munge/munged.pid" --seed-file="$STATE/munge/seed" \
        --log-file="$STATE/log/munged.log" < /dev/null > "$STATE/log/munged.out" 2>&1 &
    echo $! > "$STATE/munged.pid"
    for _ in $(seq 50); do [ -S "$STATE/munge/munge.socket" ] && break; sleep 0.1; done
    [ -S "$STATE/munge/munge.socket" ] || { cat "$STATE/log/munged.out" >&2; cmd_stop quiet; die "munged did not start"; }
    setsid slurmctld -D -f "$CONF" < /dev/null > "$STATE/log/slurmctld.out" 2>&1 &
    echo $! > "$STATE/slurmctld.pid"
    setsid slurmd -D -f "$CONF" -N "$NODE" < /dev/null > "$STATE/log/slurmd.out" 2>&1 &
    echo $! > "$STATE/slurmd.pid"
    # the node is usable once sinfo shows it idle
    for _ in $(seq 60); do
        if sinfo -h -n "$NODE" -o %t 2>/dev/null | grep -q '^idle'; then
            echo "slurm_cluster: running; $(sinfo -h -o '%P %D nodes %c cpus %m MB %l limit') ($STATE)"
            return 0
        fi
        for d in "${DAEMONS[@]}"; do alive "$STATE/$d.pid" || { tail -5 "$STATE/log/$d.out" "$STATE/log/$d.log" 2>/dev/null >&2; cmd_stop quiet; die "$d exited"; }; done
        sleep 1
    done
    sinfo -N -l >&2 || true
    cmd_stop quiet
    die "the node did not become idle within 60 s (logs were in $STATE/log)"
}

cmd_stop() {
    [ -d "$STATE" ] || { [ "${1:-}" = quiet ] || echo "slurm_cluster: not running"; return 0; }
    export SLURM_CONF="$CONF"
    if alive "$STATE/slurmctld.pid"; then               # no job steps left behind slurmd
        scancel --full --quiet --user "$(id -un)" 2>/dev/null || true
        for _ in $(seq 30); do [ -z "$(squeue -h -t running,completing 2>/dev/null)" ] && break; sleep 1; done
    fi
    for d in slurmd slurmctld munged; do                # by the recorded ids, in reverse order
        if alive "$STATE/$d.pid"; then
            pid=$(cat "$STATE/$d.pid")
            kill -TERM "$pid"
            for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
            kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" || true
        fi
    done
    if [ -f "$STATE/etc_link" ] && [ "$(readlink "$ETC_CONF" || true)" = "$CONF" ]; then
        rm -f "$ETC_CONF"
    fi
    rm -rf "$STATE"
    [ "${1:-}" = quiet ] || echo "slurm_cluster: stopped"
}

cmd_status() {
    [ -d "$STATE" ] || { echo "slurm_cluster: not running"; return 1; }
    local ok=0
    for d in "${DAEMONS[@]}"; do
        if alive "$STATE/$d.pid"; then echo "$d: running, pid $(cat "$STATE/$d.pid")"
        else echo "$d: not running"; ok=1; fi
    done
    SLURM_CONF="$CONF" sinfo 2>/dev/null || true
    return $ok
}

case "${1:-}" in
    install) cmd_install ;;
    start) cmd_start ;;
    stop) cmd_stop ;;
    status) cmd_status ;;
    env) echo "export SLURM_CONF=$CONF" ;;
    *) die "usage: $0 install|start|stop|status|env" ;;
esac
