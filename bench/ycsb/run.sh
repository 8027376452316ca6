#!/usr/bin/env bash
# The real YCSB client (site.ycsb:core 0.17.0) with the CQL binding in this directory.
#
#   bench/ycsb/run.sh load|run --hosts H1,H2 [--port 9042] [--workload a] [--records N]
#                     [--operations M] [--threads T] [--target OPS] [-p key=value …]
#
# `load` creates keyspace ycsb / table usertable if absent (RF 1; `-p mosaic.rf=3`) and inserts
# the records; `run` runs the workload. Workloads a–f are YCSB's core workloads (the properties
# of its workloads/workload[a-f] files). Builds the binding with Maven on first use
# (target/ is git-ignored; Maven's downloads go to ~/.m2).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 1 ] || { sed -n '2,11p' "$0" >&2; exit 2; }
phase=$1; shift
hosts= port=9042 workload=a records=1000 operations=1000 threads=16 target=0
extra=()
while [ $# -gt 0 ]; do
    case $1 in
        --hosts) hosts=$2; shift 2 ;;
        --port) port=$2; shift 2 ;;
        --workload) workload=$2; shift 2 ;;
        --records) records=$2; shift 2 ;;
        --operations) operations=$2; shift 2 ;;
        --threads) threads=$2; shift 2 ;;
        --target) target=$2; shift 2 ;;
        -p) extra+=(-p "$2"); shift 2 ;;
        *) sed -n '2,11p' "$0" >&2; exit 2 ;;
    esac
done
[ -n "$hosts" ] || { echo "--hosts is required" >&2; exit 2; }
case $phase in
    load) mode=-load ;;
    run) mode=-t ;;
    *) echo "phase must be load or run" >&2; exit 2 ;;
esac
# YCSB's workloads/workload[a-f]: proportions read/update/scan/insert/read-modify-write.
case $workload in
    a) mix="0.5 0.5 0 0 0" dist=zipfian ;;
    b) mix="0.95 0.05 0 0 0" dist=zipfian ;;
    c) mix="1 0 0 0 0" dist=zipfian ;;
    d) mix="0.95 0 0 0.05 0" dist=latest ;;
    e) mix="0 0 0.95 0.05 0" dist=zipfian ;;
    f) mix="0.5 0 0 0 0.5" dist=zipfian ;;
    *) echo "workload must be a..f" >&2; exit 2 ;;
esac
read -r read update scan insert rmw <<< "$mix"
if [ ! -f "$here/target/mosaic-ycsb-1.jar" ]; then
    mvn -q -f "$here/pom.xml" package -DskipTests >&2
fi
exec java -cp "$here/target/mosaic-ycsb-1.jar:$here/target/lib/*" site.ycsb.Client "$mode" \
    -db mosaic.ycsb.CqlDb -s \
    -p workload=site.ycsb.workloads.CoreWorkload \
    -p hosts="$hosts" -p port="$port" -p mosaic.createschema=true \
    -p recordcount="$records" -p operationcount="$operations" -p threadcount="$threads" \
    -p target="$target" \
    -p readallfields=true -p requestdistribution="$dist" \
    -p readproportion="$read" -p updateproportion="$update" -p scanproportion="$scan" \
    -p insertproportion="$insert" -p readmodifywriteproportion="$rmw" \
    -p maxscanlength=100 -p scanlengthdistribution=uniform \
    -p measurementtype=hdrhistogram \
    "${extra[@]}"
