#!/usr/bin/env bash
# Secondary-index queries and list appends: Mosaic vs Apache Cassandra 4.1.10 (issue 15's
# benchmark), with `mosaic-bench index`, one system at a time on the same 3-node setup.
#
#   bench/index.sh [--rows 100000] [--rows-per-lo 100] [--ops 20000] [--concurrency 32]
#                  [--consistency one] [--nodes 3] [--rf 3] [--out DIR] [--systems mosaic,cassandra]
#
# For each system: a fresh cluster on 127.0.0.1..N in DIR/<system>-cluster, then
# `mosaic-bench index` (load with both indexes in place, then the `low`, `high` and `append`
# phases; report in DIR/<system>.txt), then the cluster is stopped by pid. Needs a release
# build: `cargo build --release -p mosaic-server -p mosaic-bench` ($CARGO_TARGET_DIR or
# ./target). CQL ports: $PORT (default 39042) for Mosaic, $PORT+1 for Cassandra.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rows=100000 rows_per_lo=100 ops=20000 concurrency=32 consistency=one nodes=3 rf=3
out=/tmp/mosaic-index systems=mosaic,cassandra
while [ $# -gt 0 ]; do
    case $1 in
        --rows) rows=$2; shift 2 ;;
        --rows-per-lo) rows_per_lo=$2; shift 2 ;;
        --ops) ops=$2; shift 2 ;;
        --concurrency) concurrency=$2; shift 2 ;;
        --consistency) consistency=$2; shift 2 ;;
        --nodes) nodes=$2; shift 2 ;;
        --rf) rf=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --systems) systems=$2; shift 2 ;;
        *) sed -n '2,12p' "$0" >&2; exit 2 ;;
    esac
done
. "$root/bench/lib.sh"
find_mosaic "$root"
find_bench "$root"
mkdir -p "$out"
port=${PORT:-39042}
require_free_ports "$port" $((port + 1))

for system in ${systems//,/ }; do
    cluster=$out/$system-cluster
    rm -rf "$cluster"
    case $system in
        mosaic)
            "$mosaic" cluster up --nodes "$nodes" --dir "$cluster" --port $port \
                --storage-port $((port - 3000)) --admin-port $((port - 2800))
            stop=("$mosaic" cluster down --dir "$cluster")
            host=127.0.0.1:$port
            ;;
        cassandra)
            "$root/bench/cassandra/cluster.sh" up --nodes "$nodes" --dir "$cluster" \
                --port $((port + 1)) --storage-port $((port - 2000)) --jmx-port $((port - 1900))
            stop=("$root/bench/cassandra/cluster.sh" down --dir "$cluster")
            host=127.0.0.1:$((port + 1))
            ;;
        *) echo "unknown system $system" >&2; exit 2 ;;
    esac
    trap '"${stop[@]}"' EXIT
    echo "== $system"
    "$bench" index --host "$host" --rf "$rf" --rows "$rows" --rows-per-lo "$rows_per_lo" \
        --ops "$ops" --concurrency "$concurrency" --consistency "$consistency" | tee "$out/$system.txt"
    "${stop[@]}"
    trap - EXIT
    [ "${KEEP:-0}" = 1 ] || rm -rf "$cluster"
done
for system in ${systems//,/ }; do
    echo "== $system"; grep -E '^(load|low|high|append) ' "$out/$system.txt"
done
