#!/usr/bin/env bash
# DEPART's experiments (FAST '22 §5), scaled to this machine: the replica layouts uniform,
# multi-lsm and decoupled side by side in one run, each on a fresh local Mosaic cluster.
#
#   bench/depart.sh EXPERIMENT [--records N] [--operations N] [--scans N] [--nodes 5]
#                   [--rf 3] [--concurrency 32] [--layouts uniform,multi-lsm,decoupled]
#                   [--out DIR] [--memtable-mib 192] [--set KEY=VALUE]...
#                   [--disk-mib-per-s W] [--disk-iops N] [--node-memory-mib M]
#                   [--phases read,scan,update] [--distribution zipfian]
#
# Experiments (rows of 1 KiB: one field of 1000 bytes, so an update rewrites the row as in
# DEPART; zipfian 0.99 requests):
#   exp1      at (W,R) = (1,1) and (3,1): load (random writes), reads, 100-row scans,
#             updates; throughput, p99, disk bytes per user byte, memtable memory
#   exp2      the same phases at (2,2) and (1,3)
#   exp8      decoupled only, at (2,2), with S (sorted runs per range group) = 1, 10, 20
#             and 1,000,000
#   exp6      time to recover a wiped node (kill -9, delete its data, replace it at its
#             address: it streams its ranges; then repair)
#   ycsb      YCSB A–F (10 fields x 100 bytes) at (1,1)
#   smoke     exp1's phases at (1,1) on 20,000 records, 20,000 operations and 2,000 scans
#             unless --records, --operations or --scans say otherwise (checks the pipeline
#             in minutes)
# --phases picks which of exp1/exp2/exp8/smoke's phases run after the load, in the order
# given (a phase may repeat: update,update); every node's `mosaic stats --json` is saved
# after each (stats-<phase>[-<n>].json), so the engines' counters (write stalls and
# slowdowns, flushes, compactions, splits, disk bytes) can be told apart per phase. An
# update phase is followed by a drain too (drain-<phase>.json), so updates are reported
# with and without the compaction debt they leave, as the load is. --distribution sets
# the key choice of the phases after the load (mosaic-bench's: zipfian, uniform, …).
# After each load, `mosaic compactionstats --wait` times the drain of the flushes and
# compactions the load left (drain.json), so the load's throughput is reported both
# without and with its compaction debt paid.
# Equal memory: every layout's memtables share one node-wide budget, --memtable-mib
# (storage.memtable_space_bytes; each memtable's own cap, memtable_size_bytes, is set to the
# same so it never binds: the largest memtable is flushed once all unflushed ones pass
# memtable_cleanup_threshold, a third, of it), and the node's one block cache.
# The emulated disk-bound regime (BENCHMARKS.md, "DEPART in a disk-bound regime"; root and
# cgroup v1, see bench/lib.sh): --disk-mib-per-s and --disk-iops put each node on its own
# loop device throttled to W MiB/s and N IOPS (reads and writes each), --node-memory-mib
# bounds each node's RSS and page cache to M MiB; the memory groups' peaks land in
# memory.txt beside each layout's results.
# Each configuration's results land in DIR/<experiment>/<config>/<layout>/ (bench JSON per
# phase, every node's `mosaic stats --json` after the load and at the end); then
# bench/depart_summary.py DIR/<experiment> writes results.md, results.json and SVG plots.
# Needs a release build (cargo build --release -p mosaic-server). CQL port $PORT (49042);
# the cluster directory is removed after each configuration unless KEEP=1 (in the regime its
# data goes with the disk images whatever KEEP says). Every --set is
# passed to `mosaic cluster up` for every cluster of the run (e.g. --set
# storage.direct_io=true --set storage.block_cache_size_bytes=8388608 to make reads reach
# the disk, --set scheduling.replica_selection=primary-first for DEPART's read routing).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
usage() { sed -n '2,51p' "$0" >&2; exit 2; }
[ $# -ge 1 ] || usage
experiment=$1; shift
records=2000000 operations=200000 scans=20000 nodes=5 rf=3 concurrency=32
layouts=uniform,multi-lsm,decoupled out=/tmp/mosaic-depart records_given=
memtable_mib=192 DISK_MIB_PER_S=0 DISK_IOPS=0 NODE_MEMORY_MIB=0
phase_list=read,scan,update operations_given= scans_given= distribution=zipfian
common=()
while [ $# -gt 0 ]; do
    case $1 in
        --records) records=$2; records_given=1; shift 2 ;;
        --memtable-mib) memtable_mib=$2; shift 2 ;;
        --disk-mib-per-s) DISK_MIB_PER_S=$2; shift 2 ;;
        --disk-iops) DISK_IOPS=$2; shift 2 ;;
        --node-memory-mib) NODE_MEMORY_MIB=$2; shift 2 ;;
        --operations) operations=$2; operations_given=1; shift 2 ;;
        --scans) scans=$2; scans_given=1; shift 2 ;;
        --phases) phase_list=$2; shift 2 ;;
        --distribution) distribution=$2; shift 2 ;;
        --nodes) nodes=$2; shift 2 ;;
        --rf) rf=$2; shift 2 ;;
        --concurrency) concurrency=$2; shift 2 ;;
        --layouts) layouts=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --set) common+=("$2"); shift 2 ;;
        *) usage ;;
    esac
done
mosaic=${MOSAIC_BIN:-${CARGO_TARGET_DIR:-$root/target}/release/mosaic}
[ -x "$mosaic" ] || { echo "no $mosaic: cargo build --release -p mosaic-server" >&2; exit 1; }
client="$(dirname "$mosaic")/mosaic-bench"
[ -x "$client" ] || { echo "no $client: cargo build --release -p mosaic-bench" >&2; exit 1; }
port=${PORT:-49042} storage=$((${PORT:-49042} - 3000)) admin=$((${PORT:-49042} - 2800))
if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    echo "127.0.0.1:$port is taken; set PORT" >&2; exit 1
fi
hosts=$(seq -s, -f "127.0.0.%g:$port" 1 "$nodes")
dir=$out/$experiment
mkdir -p "$dir"
cluster=$dir/cluster
. "$root/bench/lib.sh"
disk_regime_init "$dir"
down() { "$mosaic" cluster down --dir "$cluster" >/dev/null 2>&1 || true; }
# Nodes first (a mounted file system cannot go while they run), then the regime.
cleanup() { down; disk_regime_teardown; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
pid_files() { local f=""; for i in $(seq 1 "$nodes"); do f="$f${f:+,}$cluster/node$i/pid"; done; echo "$f"; }
cl() { case $1 in 1) echo ONE ;; 2) echo TWO ;; 3) echo THREE ;; *) echo "$1" ;; esac; }
row=(--field-count 1 --field-length 1000)

# Equal memory for every layout (see the header); --set may still override both.
memtable_bytes=$((memtable_mib << 20))
memory=("storage.memtable_space_bytes=$memtable_bytes" "storage.memtable_size_bytes=$memtable_bytes")

up() { # settings...
    down; disk_regime_teardown; rm -rf "$cluster" "$cluster.disks"
    [ "$regime" = 0 ] || disk_regime_setup "$cluster" "$nodes"
    local set=() i
    for s in "${memory[@]}" ${common[@]+"${common[@]}"} "$@"; do set+=(--set "$s"); done
    "$mosaic" cluster up --nodes "$nodes" --dir "$cluster" --port "$port" \
        --storage-port "$storage" --admin-port "$admin" ${cgroup_args[@]+"${cgroup_args[@]}"} \
        "${set[@]}" >/dev/null
    for i in $(seq 1 "$nodes"); do disk_regime_verify "$(cat "$cluster/node$i/pid")" "$i"; done
}

# Stops the cluster, undoes the regime (the data goes with the images), and removes the
# cluster directory unless KEEP=1.
finish() {
    down; disk_regime_teardown
    [ "${KEEP:-0}" = 1 ] || rm -rf "$cluster" "$cluster.disks"
}

# Waits until no node has a flush or compaction running or due; the wait's seconds and
# what each node had left land in $1.
drain() { # out-json
    echo "   drain $(basename "$(dirname "$1")") ($(uptime | sed 's/.*load/load/'))" >&2
    "$mosaic" compactionstats --wait --timeout-s 14400 --json --host "127.0.0.1:$admin" > "$1"
}

stats() { # file: every live node's `mosaic stats --json`
    "$mosaic" stats --host "127.0.0.1:$admin" --json > "$1"
}

bench() { # out-json phase args...
    local json=$1 phase=$2; shift 2
    echo "   $phase $(basename "$json" .json) ($(uptime | sed 's/.*load/load/'))" >&2
    "$client" "$phase" --hosts "$hosts" --records "$records" --concurrency "$concurrency" \
        --pid-files "$(pid_files)" --quiet --json "$json" "$@" > "${json%.json}.txt"
}

# The four phases of Exp#1/Exp#2 for one layout at (W,R), on a fresh cluster.
phases() { # config-dir layout w r settings...
    local d=$1 layout=$2 w=$3 r=$4; shift 4
    mkdir -p "$d"
    echo "== $experiment $(basename "$(dirname "$d")") $layout: (W,R)=($w,$r)" >&2
    up "$@"
    bench "$d/load.json" load --workload a --rf "$rf" --layout "$layout" \
        --write-cl "$(cl "$w")" "${row[@]}"
    drain "$d/drain.json"
    stats "$d/stats-load.json"
    local p name keys=(--distribution "$distribution")
    for p in ${phase_list//,/ }; do
        name=$p
        [ ! -e "$d/$name.json" ] || name=$p-$(ls "$d/$p"*.json | grep -c "/$p\(-[0-9]*\)\?\.json$")
        case $p in
            read) bench "$d/$name.json" run --workload c --operations "$operations" \
                --read-cl "$(cl "$r")" "${row[@]}" "${keys[@]}" ;;
            scan) bench "$d/$name.json" run --workload e --operations "$scans" \
                --read-cl "$(cl "$r")" --insert-proportion 0 --scan-proportion 1 \
                --scan-length 100 "${row[@]}" "${keys[@]}" ;;
            update) bench "$d/$name.json" run --workload a --operations "$operations" \
                --write-cl "$(cl "$w")" --read-proportion 0 --update-proportion 1 "${row[@]}" \
                "${keys[@]}"
                drain "$d/drain-$name.json" ;;
            *) echo "unknown phase $p (read, scan, update)" >&2; exit 2 ;;
        esac
        stats "$d/stats-$name.json"
    done
    stats "$d/stats-end.json"
    du -sb --exclude=lost+found "$cluster" | awk '{print $1}' > "$d/disk-bytes"
    disk_regime_report "$nodes" > "$d/memory.txt"
    finish
}

case $experiment in
    smoke)
        [ -n "$records_given" ] || records=20000
        [ -n "$operations_given" ] || operations=20000
        [ -n "$scans_given" ] || scans=2000
        for l in ${layouts//,/ }; do phases "$dir/w1r1/$l" "$l" 1 1; done ;;
    exp1)
        for wr in "1 1" "3 1"; do
            set -- $wr
            for l in ${layouts//,/ }; do phases "$dir/w$1r$2/$l" "$l" "$1" "$2"; done
        done ;;
    exp2)
        for wr in "2 2" "1 3"; do
            set -- $wr
            for l in ${layouts//,/ }; do phases "$dir/w$1r$2/$l" "$l" "$1" "$2"; done
        done ;;
    exp8)
        for s in 1 10 20 1000000; do
            phases "$dir/S$s/decoupled" decoupled 2 2 "storage.sorted_runs_max=$s"
        done ;;
    exp6)
        for l in ${layouts//,/ }; do
            d=$dir/recovery/$l
            mkdir -p "$d"
            echo "== exp6 $l" >&2
            up
            bench "$d/load.json" load --workload a --rf "$rf" --layout "$l" --write-cl ALL "${row[@]}"
            drain "$d/drain.json"
            stats "$d/stats-load.json"
            kill -9 "$(cat "$cluster/node3/pid")"
            while kill -0 "$(cat "$cluster/node3/pid")" 2>/dev/null; do sleep 0.1; done
            rm -rf "$cluster/node3/data" "$cluster/node3/pid"
            start=$(date +%s.%N)
            "$mosaic" cluster add-node --dir "$cluster" --replace "127.0.0.3:$storage" \
                ${cgroup_args[@]+"${cgroup_args[@]}"} >/dev/null
            restarted=$(date +%s.%N)
            "$mosaic" repair --host "127.0.0.3:$admin" > "$d/repair.txt"
            finished=$(date +%s.%N)
            python3 - "$start" "$restarted" "$finished" > "$d/recovery.json" <<'EOF'
import json, sys
start, up, done = map(float, sys.argv[1:])
print(json.dumps({"replace_s": round(up - start, 2), "repair_s": round(done - up, 2),
                  "total_s": round(done - start, 2)}))
EOF
            stats "$d/stats-end.json"
            cat "$d/recovery.json" >&2
            finish
        done ;;
    ycsb)
        for l in ${layouts//,/ }; do
            d=$dir/ycsb/$l
            mkdir -p "$d"
            echo "== ycsb $l" >&2
            up
            bench "$d/load.json" load --workload a --rf "$rf" --layout "$l"
            drain "$d/drain.json"
            for w in a b c d e f; do
                ops=$operations
                [ "$w" = e ] && ops=$scans
                bench "$d/$w.json" run --workload "$w" --operations "$ops"
            done
            stats "$d/stats-end.json"
            disk_regime_report "$nodes" > "$d/memory.txt"
            finish
        done ;;
    *) echo "unknown experiment $experiment" >&2; exit 2 ;;
esac
"$root/bench/depart_summary.py" "$dir"
