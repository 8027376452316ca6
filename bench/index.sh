#!/usr/bin/env bash
# Secondary-index queries and list appends (issue 15): Mosaic against Apache Cassandra
# 4.1.10, both as 3-node clusters (RF 3) up side by side on this machine, with the same
# `mosaic-bench index` client.
#
#   bench/index.sh [--rows 100000] [--lo-values 1000] [--workloads low,high,append]
#                  [--duration 20] [--warmup 5] [--reps 3] [--concurrency 64]
#                  [--read-cl ONE] [--write-cl ONE] [--load-cl ALL] [--list-reads 0]
#                  [--nodes 3] [--rf 3] [--heap 1G] [--out DIR] [--no-build]
#
# 1. Builds the release binaries (CARGO_TARGET_DIR, /tmp/target-release by default:
#    `cargo build --release -p mosaic-server -p mosaic-bench`; --no-build skips it) and
#    copies `mosaic` and `mosaic-bench` to DIR/bin, so a rebuild elsewhere during the run
#    changes nothing.
# 2. Starts a Mosaic cluster in DIR/mosaic-cluster (`mosaic cluster up`: CQL on
#    127.0.0.1..N:$PORT, 29042 by default; storage PORT-3000, admin PORT-2800) and a
#    Cassandra cluster in DIR/cassandra-cluster (bench/cassandra/cluster.sh: CQL on
#    PORT+1, storage PORT-2000, JMX PORT-1900+i), both default configuration.
# 3. `mosaic-bench index load` on each: keyspace `idxbench` (RF --rf), table
#    `t (k bigint PRIMARY KEY, lo int, hi text, tags list<int>)` with indexes on `lo` and
#    `hi` created before the rows (the load waits until every node lists them built in
#    `system."IndexInfo"`), then --rows rows at --load-cl (ALL: every replica holds every
#    row, so answers at ONE can be checked exactly): `lo = k % lo_values` (a `low` query
#    returns rows/lo_values rows: 100 by default), `hi` unique per row.
# 4. --reps times, each workload of --workloads on both systems one after the other (the
#    first system alternating by repetition, so the machine's drift hits both alike):
#    `mosaic-bench index run --workload W` for --warmup s not counted, then --duration s
#    measured, --concurrency requests in flight:
#      low     SELECT k FROM t WHERE lo = ?            (every page read; --read-cl)
#      high    SELECT k FROM t WHERE hi = ?            (--read-cl)
#      append  UPDATE t SET tags = tags + ? WHERE k = ? (a one-element list; --write-cl;
#              --list-reads F makes a share F of the operations SELECT tags … instead)
#    Every answer is checked against the data set (wrong or missing rows are errors).
# 5. Stops both clusters (by pid) and writes DIR/results.md and DIR/results.json
#    (bench/index_summary.py): per workload and system the median ops/s and rows/s of the
#    repetitions, Mosaic/Cassandra of the medians and per repetition, latency, server CPU
#    per operation, errors; and per run the cores the measured cluster, the idle one and
#    everything else on the machine (the client included) used, from /proc before and
#    after it (warm-up included): other work on a shared machine moves single runs.
# JSON per run in DIR/<system>/<workload>-<rep>.json (load: DIR/<system>/load.json). The
# cluster directories are removed at the end unless KEEP=1.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
usage() { sed -n '2,41p' "$0" >&2; exit 2; }
rows=100000 lo_values=1000 workloads=low,high,append duration=20 warmup=5 reps=3
concurrency=64 read_cl=ONE write_cl=ONE load_cl=ALL list_reads=0 nodes=3 rf=3 heap=1G
out=/tmp/mosaic-index build=1
while [ $# -gt 0 ]; do
    case $1 in
        --rows) rows=$2; shift 2 ;;
        --lo-values) lo_values=$2; shift 2 ;;
        --workloads) workloads=$2; shift 2 ;;
        --duration) duration=$2; shift 2 ;;
        --warmup) warmup=$2; shift 2 ;;
        --reps) reps=$2; shift 2 ;;
        --concurrency) concurrency=$2; shift 2 ;;
        --read-cl) read_cl=$2; shift 2 ;;
        --write-cl) write_cl=$2; shift 2 ;;
        --load-cl) load_cl=$2; shift 2 ;;
        --list-reads) list_reads=$2; shift 2 ;;
        --nodes) nodes=$2; shift 2 ;;
        --rf) rf=$2; shift 2 ;;
        --heap) heap=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --no-build) build=0; shift ;;
        *) usage ;;
    esac
done
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/tmp/target-release}
if [ "$build" = 1 ]; then
    (cd "$root" && cargo build --release -p mosaic-server -p mosaic-bench)
fi
# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
find_mosaic "$root"
find_bench "$root"
port=${PORT:-29042}
require_free_ports "$port" $((port + 1)) $((port - 3000)) $((port - 2800)) $((port - 2000))
mkdir -p "$out/bin" "$out/mosaic" "$out/cassandra"
cp "$mosaic" "$bench" "$out/bin/"
mosaic=$out/bin/mosaic bench=$out/bin/mosaic-bench
mcluster=$out/mosaic-cluster ccluster=$out/cassandra-cluster

stop_all() { stop_clusters "$mcluster" "$ccluster"; }
trap stop_all EXIT

{
    env_header "$root"
    echo "java: $(java -version 2>&1 | head -1)"
    echo "args: rows=$rows lo_values=$lo_values workloads=$workloads duration=$duration warmup=$warmup reps=$reps concurrency=$concurrency read_cl=$read_cl write_cl=$write_cl load_cl=$load_cl list_reads=$list_reads nodes=$nodes rf=$rf heap=$heap"
} > "$out/env.txt"
cat "$out/env.txt"

rm -rf "$mcluster" "$ccluster"
log "starting Mosaic"
"$mosaic" cluster up --nodes "$nodes" --dir "$mcluster" --port "$port" \
    --storage-port $((port - 3000)) --admin-port $((port - 2800)) >/dev/null
log "starting Cassandra"
"$root/bench/cassandra/cluster.sh" up --nodes "$nodes" --dir "$ccluster" --heap "$heap" \
    --port $((port + 1)) --storage-port $((port - 2000)) --jmx-port $((port - 1900)) >/dev/null

hosts_of() { seq -s, -f "127.0.0.%g:$1" 1 "$nodes"; }
pids_of() { seq -s, -f "$1/node%g/pid" 1 "$nodes"; }

# Writes to $1 the machine's CPU time (jiffies, /proc/stat) and each cluster's (its nodes'
# utime + stime): before and after each run, so the summary can tell how much of the
# cores the other cluster and everything else on the machine took during it.
snap() { # out-json
    python3 - "$1" "$(pids_of "$mcluster")" "$(pids_of "$ccluster")" <<'EOF'
import json, os, sys, time
out, mosaic, cassandra = sys.argv[1:4]
def cluster(files):
    jiffies = 0
    for f in files.split(","):
        with open(f) as p, open(f"/proc/{p.read().strip()}/stat") as s:
            fields = s.read().rsplit(")", 1)[1].split()
        jiffies += int(fields[11]) + int(fields[12])  # utime, stime
    return jiffies
with open("/proc/stat") as f:
    cpu = [int(x) for x in f.readline().split()[1:9]]
snap = {"t": time.time(), "hz": os.sysconf("SC_CLK_TCK"), "total": sum(cpu),
        "idle": cpu[3] + cpu[4], "mosaic": cluster(mosaic), "cassandra": cluster(cassandra)}
with open(out, "w") as f:
    json.dump(snap, f)
EOF
}

index() { # system out-json command args...
    local system=$1 json=$2 command=$3; shift 3
    local cport=$port cluster=$mcluster
    [ "$system" = cassandra ] && cport=$((port + 1)) cluster=$ccluster
    "$bench" index "$command" --hosts "$(hosts_of $cport)" --pid-files "$(pids_of "$cluster")" \
        --rows "$rows" --lo-values "$lo_values" --concurrency "$concurrency" --quiet \
        --json "$json" "$@" > "${json%.json}.txt"
}

for system in mosaic cassandra; do
    log "$system: load"
    index "$system" "$out/$system/load.json" load --rf "$rf" --write-cl "$load_cl"
    sed -n '2p;4,$p' "$out/$system/load.txt" >&2
done

for rep in $(seq 1 "$reps"); do
    for w in ${workloads//,/ }; do
        for system in $( [ $((rep % 2)) = 1 ] && echo mosaic cassandra || echo cassandra mosaic ); do
            log "rep $rep: $w on $system"
            snap "$out/$system/$w-$rep.cpu-before.json"
            index "$system" "$out/$system/$w-$rep.json" run --workload "$w" \
                --duration "$duration" --warmup "$warmup" --read-cl "$read_cl" \
                --write-cl "$write_cl" --list-reads "$list_reads"
            snap "$out/$system/$w-$rep.cpu-after.json"
            sed -n '2p;4,$p' "$out/$system/$w-$rep.txt" | grep -v '^server disk' >&2 || true
        done
    done
done

for system in mosaic cassandra; do
    c=$mcluster; [ "$system" = cassandra ] && c=$ccluster
    du -sb "$c" | awk '{print $1}' > "$out/$system/disk-bytes.txt"
    for f in $(pids_of "$c" | tr , ' '); do
        grep -E '^Vm(HWM|RSS)' "/proc/$(cat "$f")/status" | tr -s ' \t' ' ' | paste -sd' ' \
            | sed "s|^|$(basename "$(dirname "$f")"): |"
    done > "$out/$system/memory.txt"
done
log "stopping"
stop_all
trap - EXIT
[ "${KEEP:-0}" = 1 ] || rm -rf "$mcluster" "$ccluster"
python3 "$root/bench/index_summary.py" "$out"
log "done: $out/results.md"
