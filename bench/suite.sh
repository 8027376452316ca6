#!/usr/bin/env bash
# A named experiment end to end, repeated: for each workload and repeat, bench/compare.sh
# (fresh cluster per system, load, run, collect, stop), then bench/summarize.py --suite writes
# the medians as results.json, results.md and SVG plots (throughput bars, latency CDFs).
#
#   bench/suite.sh NAME [--repeat 3] [--out /tmp/mosaic-suite]
#
# Experiments:
#   smoke       workload a, 2,000 records, 2,000 operations (a minute; checks the pipeline)
#   ycsb-1node  workloads a–f, 100,000 records, 100,000 operations (e: 10,000), one node each
#   ycsb-1node-a  workload a only, as ycsb-1node
#   ycsb-3node  workloads a–f on 3 nodes, keyspace at RF 3, CL ONE: each repeat loads
#               100,000 records once per system, then runs a, b, c, d, e, f on that data
#               (100,000 operations each, e: 10,000)
#   ycsb-5node  the same on 5 nodes
# Systems: Mosaic and Apache Cassandra 4.1.10 (bench/cassandra), 16 requests in flight.
# Rerunning the same command resumes: complete runs are kept.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 1 ] || { sed -n '2,20p' "$0" >&2; exit 2; }
name=$1; shift
repeat=3 out=/tmp/mosaic-suite
while [ $# -gt 0 ]; do
    case $1 in
        --repeat) repeat=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        *) sed -n '2,20p' "$0" >&2; exit 2 ;;
    esac
done
records=100000 operations=100000 nodes=1
case $name in
    smoke) workloads="a" records=2000 operations=2000 ;;
    ycsb-1node) workloads="a b c d e f" ;;
    ycsb-1node-a) workloads="a" ;;
    ycsb-3node) workloads="a b c d e f" nodes=3 ;;
    ycsb-5node) workloads="a b c d e f" nodes=5 ;;
    *) echo "unknown experiment $name" >&2; exit 2 ;;
esac
dir=$out/$name
mkdir -p "$dir"
if [ "$nodes" -gt 1 ]; then
    # One load per system and repeat, then every workload on that data; the runs are
    # filed as DIR/<workload>/r<N>/ (and the loads as DIR/load/r<N>/) for summarize.py.
    for r in $(seq 1 "$repeat"); do
        if [ -f "$dir/f/r$r/mosaic-run.json" ] && [ -f "$dir/f/r$r/cassandra-run.json" ]; then
            continue
        fi
        echo "== $name: repeat $r of $repeat ($(uptime | sed 's/.*load/load/'))"
        tmp=$dir/.r$r
        rm -rf "$tmp"
        "$here/compare.sh" --workload "${workloads// /,}" --records "$records" \
            --operations "$operations" --nodes "$nodes" --rf 3 --out "$tmp" \
            > "$dir/r$r.log" 2>&1 || { tail -20 "$dir/r$r.log" >&2; exit 1; }
        for w in load $workloads; do
            mkdir -p "$dir/$w"
            rm -rf "$dir/$w/r$r"
            mv "$tmp/$w" "$dir/$w/r$r"
        done
        rm -rf "$tmp"
    done
    "$here/summarize.py" --suite "$dir"
    exit 0
fi
for r in $(seq 1 "$repeat"); do
    for w in $workloads; do
        ops=$operations
        # Workload E's scans run at hundreds per second on Mosaic today (BENCHMARKS.md).
        [ "$w" = e ] && ops=$((operations / 10))
        # A run already complete (a resumed suite) is kept.
        if [ -f "$dir/$w/r$r/mosaic-run.json" ] && [ -f "$dir/$w/r$r/cassandra-run.json" ]; then
            continue
        fi
        mkdir -p "$dir/$w"
        echo "== $name: workload $w, repeat $r of $repeat ($(uptime | sed 's/.*load/load/'))"
        "$here/compare.sh" --workload "$w" --records "$records" --operations "$ops" \
            --out "$dir/$w/r$r" > "$dir/$w/r$r.log" 2>&1 || {
            tail -20 "$dir/$w/r$r.log" >&2; exit 1; }
    done
done
"$here/summarize.py" --suite "$dir"
