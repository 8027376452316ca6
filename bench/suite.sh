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
# Systems: Mosaic and Apache Cassandra 4.1.10 (bench/cassandra), 16 requests in flight.
# Rerunning the same command resumes: complete runs are kept.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 1 ] || { sed -n '2,16p' "$0" >&2; exit 2; }
name=$1; shift
repeat=3 out=/tmp/mosaic-suite
while [ $# -gt 0 ]; do
    case $1 in
        --repeat) repeat=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        *) sed -n '2,16p' "$0" >&2; exit 2 ;;
    esac
done
records=100000 operations=100000
case $name in
    smoke) workloads="a" records=2000 operations=2000 ;;
    ycsb-1node) workloads="a b c d e f" ;;
    ycsb-1node-a) workloads="a" ;;
    *) echo "unknown experiment $name" >&2; exit 2 ;;
esac
dir=$out/$name
mkdir -p "$dir"
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
