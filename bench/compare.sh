#!/usr/bin/env bash
# Mosaic vs Apache Cassandra 4.1.10 with `mosaic-bench`, one system at a time.
#
#   bench/compare.sh [--workload a] [--records 100000] [--operations 100000]
#                    [--concurrency 16] [--out DIR] [--systems mosaic,cassandra]
#                    [--nodes 1] [--rf 1] [--tables 1] [--set KEY=VALUE]...
#                    [--disk-mib-per-s W] [--disk-iops N] [--node-memory-mib M]
#                    [--cassandra-heap 1G]
#
# For each system: start a fresh cluster of --nodes nodes on 127.0.0.1..N in
# DIR/<system>-cluster, `mosaic-bench load` (keyspace at replication factor --rf)
# then `mosaic-bench run` (reports and JSON in DIR/<system>-{load,run}.{txt,json}, server disk
# traffic from /proc/PID/io), and stop it right away. With several workloads
# (--workload a,b,c,d,e,f) each cluster is loaded once and runs them in that order on the
# same data, as YCSB's own documentation runs A–F: the load lands in DIR/load/ and each
# workload's run in DIR/<workload>/ (E runs a tenth of --operations: its scans are slow). Needs a release build:
# `cargo build --release -p mosaic-server -p mosaic-bench` ($CARGO_TARGET_DIR or ./target). CQL ports: $PORT
# (default 39042) for Mosaic, $PORT+1 for Cassandra. The cluster directories are removed
# after each system unless KEEP=1. --tables N spreads the records over N tables (usertable0…):
# the many-tables comparison runs the same workload at --tables 100 and --tables 1.
# --set passes a config key to every Mosaic node (`mosaic cluster up --set`); --cassandra-heap
# is each Cassandra node's heap. The emulated disk-bound regime (bench/lib.sh; root and
# cgroup v1) gives both systems identical nodes: --disk-mib-per-s and --disk-iops put each
# node's directory on its own loop device throttled to W MiB/s and N IOPS, --node-memory-mib
# bounds each node's RSS and page cache (a JVM's heap included) to M MiB; the groups' peaks
# land in DIR/<system>-regime-memory.txt.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
workload=a records=100000 operations=100000 concurrency=16 out=/tmp/mosaic-compare
systems=mosaic,cassandra nodes=1 rf=1 tables=1 settings=() cassandra_heap=1G
DISK_MIB_PER_S=0 DISK_IOPS=0 NODE_MEMORY_MIB=0
while [ $# -gt 0 ]; do
    case $1 in
        --workload) workload=$2; shift 2 ;;
        --records) records=$2; shift 2 ;;
        --operations) operations=$2; shift 2 ;;
        --concurrency) concurrency=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --systems) systems=$2; shift 2 ;;
        --nodes) nodes=$2; shift 2 ;;
        --rf) rf=$2; shift 2 ;;
        --tables) tables=$2; shift 2 ;;
        --set) settings+=(--set "$2"); shift 2 ;;
        --disk-mib-per-s) DISK_MIB_PER_S=$2; shift 2 ;;
        --disk-iops) DISK_IOPS=$2; shift 2 ;;
        --node-memory-mib) NODE_MEMORY_MIB=$2; shift 2 ;;
        --cassandra-heap) cassandra_heap=$2; shift 2 ;;
        *) sed -n '2,26p' "$0" >&2; exit 2 ;;
    esac
done
. "$root/bench/lib.sh"
find_mosaic "$root"
find_bench "$root"
mkdir -p "$out"
disk_regime_init "$out"
trap 'exit 130' INT
trap 'exit 143' TERM
port=${PORT:-39042}
require_free_ports "$port" $((port + 1))

# Every node's CQL address and pid file, comma-separated.
hosts_on() { seq -s, -f "127.0.0.%g:$1" 1 "$nodes"; }
pids_in() { local f=""; for i in $(seq 1 "$nodes"); do f="$f${f:+,}$1/node$i/pid"; done; echo "$f"; }

workloads=(${workload//,/ })
phase() { # system phase workload dir host pidfile extra...
    local system=$1 phase=$2 w=$3 dir=$4 host=$5 pidfile=$6; shift 6
    mkdir -p "$dir"
    "$bench" "$phase" --hosts "$host" --workload "$w" --records "$records" \
        --concurrency "$concurrency" --tables "$tables" --pid-files "$pidfile" --quiet \
        --json "$dir/$system-$phase.json" "$@" | tee "$dir/$system-$phase.txt"
}

for system in ${systems//,/ }; do
    cluster=$out/$system-cluster
    rm -rf "$cluster" "$cluster.disks"
    [ "$regime" = 0 ] || disk_regime_setup "$cluster" "$nodes"
    echo "== $system: workload $workload, $records records, $operations operations, $concurrency in flight"
    case $system in
        mosaic)
            trap '"$mosaic" cluster down --dir "$cluster"; disk_regime_teardown' EXIT
            "$mosaic" cluster up --nodes "$nodes" --dir "$cluster" --port $port \
                --storage-port $((port - 3000)) --admin-port $((port - 2800)) \
                ${cgroup_args[@]+"${cgroup_args[@]}"} ${settings[@]+"${settings[@]}"}
            host=$(hosts_on $port) pidfile=$(pids_in "$cluster")
            stop=("$mosaic" cluster down --dir "$cluster")
            ;;
        cassandra)
            # Storage and JMX ports away from Cassandra's defaults, which other local
            # clusters may hold.
            # CQL on PORT+1: Mosaic's just-closed connections leave PORT in TIME_WAIT, and
            # Cassandra's native transport does not bind over that. Storage and JMX ports
            # away from Cassandra's defaults, which other local clusters may hold.
            trap '"$root/bench/cassandra/cluster.sh" down --dir "$cluster"; disk_regime_teardown' EXIT
            "$root/bench/cassandra/cluster.sh" up --nodes "$nodes" --dir "$cluster" \
                --port $((port + 1)) --storage-port $((port - 2000)) --jmx-port $((port - 1900)) \
                --heap "$cassandra_heap" ${cgroup_args[@]+"${cgroup_args[@]}"}
            host=$(hosts_on $((port + 1))) pidfile=$(pids_in "$cluster")
            stop=("$root/bench/cassandra/cluster.sh" down --dir "$cluster")
            ;;
        *) echo "unknown system $system" >&2; exit 2 ;;
    esac
    i=0
    for f in ${pidfile//,/ }; do i=$((i + 1)); disk_regime_verify "$(cat "$f")" "$i"; done
    if [ ${#workloads[@]} -eq 1 ]; then
        phase "$system" load "$workload" "$out" "$host" "$pidfile" --rf "$rf"
        phase "$system" run "$workload" "$out" "$host" "$pidfile" --operations "$operations"
    else
        phase "$system" load "${workloads[0]}" "$out/load" "$host" "$pidfile" --rf "$rf"
        for w in "${workloads[@]}"; do
            ops=$operations
            [ "$w" = e ] && ops=$((operations / 10))
            echo "-- $system: workload $w, $ops operations"
            phase "$system" run "$w" "$out/$w" "$host" "$pidfile" --operations "$ops"
        done
    fi
    du -sb "$cluster" | awk '{print "on disk after the run: " $1 " bytes"}' | tee "$out/$system-size.txt"
    # Memory: each server process's peak and current resident set (kB), before it stops.
    mem=$out; [ ${#workloads[@]} -eq 1 ] || mem=$out/load
    for f in ${pidfile//,/ }; do
        grep -E '^Vm(HWM|RSS)' "/proc/$(cat "$f")/status" | tr -s ' \t' ' ' | paste -sd' ' \
            | sed "s|^|$(basename "$(dirname "$f")"): |"
    done | tee "$mem/$system-memory.txt"
    if [ "$regime" = 1 ]; then
        disk_regime_report "$nodes" | tee "$out/$system-regime-memory.txt"
    fi
    "${stop[@]}"
    disk_regime_teardown
    trap - EXIT
    # The data would add up over suites (~0.4 GB per run here); KEEP=1 keeps it (not in the
    # regime: its data goes with the disk images).
    [ "${KEEP:-0}" = 1 ] || rm -rf "$cluster" "$cluster.disks"
done
