#!/usr/bin/env bash
# The real YCSB client against Mosaic and Apache Cassandra 4.1.10, one system at a time: a
# second client beside `mosaic-bench`, so a figure does not rest on our own load generator.
#
#   bench/ycsb/compare.sh [--workloads a,c,e] [--records 100000] [--operations 100000]
#                         [--threads 16] [--nodes 1] [--rf 1] [--out DIR]
#                         [--systems mosaic,cassandra]
#
# For each system: a fresh cluster of --nodes nodes on 127.0.0.1..N (Mosaic: `mosaic cluster
# up`; Cassandra: bench/cassandra/cluster.sh), YCSB's load phase, then each workload's run
# phase on that data (E runs a tenth of --operations), then the cluster is stopped. YCSB's
# own reports land in DIR/<system>-<phase>.txt; DIR/results.md tables throughput and the
# p99 of every operation per workload and system. Needs a release build of Mosaic and
# Maven (the binding is built on first use). CQL ports: $PORT (default 39042) for Mosaic,
# $PORT+1 for Cassandra.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
usage() { sed -n '2,15p' "$0" >&2; exit 2; }
workloads=a,c,e records=100000 operations=100000 threads=16 nodes=1 rf=1
out=/tmp/mosaic-ycsb-compare systems=mosaic,cassandra
while [ $# -gt 0 ]; do
    case $1 in
        --workloads) workloads=$2; shift 2 ;;
        --records) records=$2; shift 2 ;;
        --operations) operations=$2; shift 2 ;;
        --threads) threads=$2; shift 2 ;;
        --nodes) nodes=$2; shift 2 ;;
        --rf) rf=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --systems) systems=$2; shift 2 ;;
        *) usage ;;
    esac
done
. "$root/bench/lib.sh"
find_mosaic "$root"
port=${PORT:-39042}
require_free_ports "$port" $((port + 1))
mkdir -p "$out"
hosts=$(seq -s, -f "127.0.0.%g" 1 "$nodes")
stop=()
cleanup() { [ ${#stop[@]} -eq 0 ] || "${stop[@]}" >/dev/null 2>&1 || true; }
trap cleanup EXIT

for system in ${systems//,/ }; do
    cluster=$out/$system-cluster
    rm -rf "$cluster"
    case $system in
        mosaic)
            cport=$port
            "$mosaic" cluster up --nodes "$nodes" --dir "$cluster" --port "$cport" \
                --storage-port $((port - 3000)) --admin-port $((port - 2800)) >/dev/null
            stop=("$mosaic" cluster down --dir "$cluster")
            ;;
        cassandra)
            cport=$((port + 1))
            "$root/bench/cassandra/cluster.sh" up --nodes "$nodes" --dir "$cluster" \
                --port "$cport" --storage-port $((port - 2000)) --jmx-port $((port - 1900)) >/dev/null
            stop=("$root/bench/cassandra/cluster.sh" down --dir "$cluster")
            ;;
        *) echo "unknown system $system" >&2; exit 2 ;;
    esac
    first=${workloads%%,*}
    echo "== $system: load ($records records)"
    "$root/bench/ycsb/run.sh" load --hosts "$hosts" --port "$cport" --workload "$first" \
        --records "$records" --threads "$threads" -p mosaic.rf="$rf" \
        > "$out/$system-load.txt" 2>"$out/$system-load.err"
    grep -E '^\[(OVERALL|INSERT)\], (Throughput|99thPercentileLatency)' "$out/$system-load.txt" || true
    for w in ${workloads//,/ }; do
        ops=$operations
        [ "$w" = e ] && ops=$((operations / 10))
        echo "== $system: workload $w ($ops operations)"
        "$root/bench/ycsb/run.sh" run --hosts "$hosts" --port "$cport" --workload "$w" \
            --records "$records" --operations "$ops" --threads "$threads" \
            > "$out/$system-$w.txt" 2>"$out/$system-$w.err"
        grep -E '^\[[A-Z-]+\], (Throughput|99thPercentileLatency)' "$out/$system-$w.txt" || true
    done
    "${stop[@]}" >/dev/null
    stop=()
    [ "${KEEP:-0}" = 1 ] || rm -rf "$cluster"
done

# One table: per workload and system, throughput and each operation's p99 (YCSB's report).
python3 - "$out" "$workloads" "$systems" > "$out/results.md" <<'EOF'
import re, sys
from pathlib import Path
out, workloads, systems = Path(sys.argv[1]), ["load"] + sys.argv[2].split(","), sys.argv[3].split(",")
def report(path):
    ops, thr = {}, None
    for line in path.read_text().splitlines():
        m = re.match(r"\[([A-Z-]+)\], ([^,]+), ([0-9.]+)", line)
        if not m:
            continue
        sec, name, val = m.group(1), m.group(2), float(m.group(3))
        if sec == "OVERALL" and name == "Throughput(ops/sec)":
            thr = val
        elif name == "99thPercentileLatency(us)" and not sec.endswith("FAILED"):
            ops[sec.lower()] = val
    return thr, ops
print("| workload | system | ops/s | p99 ms per operation |")
print("|---|---|---:|---|")
for w in workloads:
    for s in systems:
        p = out / f"{s}-{w}.txt"
        if not p.exists():
            continue
        thr, ops = report(p)
        if thr is None:
            print(f"| {w} | {s} | no report (see {p.name} and its .err) | |")
            continue
        p99 = ", ".join(f"{k} {v / 1000:.2f}" for k, v in sorted(ops.items()) if k != "cleanup")
        print(f"| {w.upper() if w != 'load' else 'load'} | {s} | {thr:,.0f} | {p99} |")
EOF
cat "$out/results.md"
