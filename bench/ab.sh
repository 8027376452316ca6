#!/usr/bin/env bash
# Mosaic against an earlier Mosaic: the same YCSB workloads on two `mosaic` binaries, one
# after the other on one node, repeated with the order swapped (ABBA) so drift on a shared
# machine cancels out; medians and the ratio new/base per workload.
#
#   bench/ab.sh --base BIN [--new BIN] [--workload a,b,c,d,e,f] [--records 100000]
#               [--operations 100000] [--concurrency 16] [--repeat 2] [--out DIR]
#
# BIN is a release `mosaic` binary; build one of an earlier commit with
#   git worktree add /tmp/mosaic-base <commit>
#   (cd /tmp/mosaic-base && CARGO_TARGET_DIR=/tmp/target-base cargo build --release -p mosaic-server)
# --new defaults to this checkout's release build. The client is this checkout's
# `mosaic-bench` (cargo build --release -p mosaic-bench), or $BENCH (a command) for both.
# Each repeat loads a fresh node per binary, then runs the workloads in order on that data
# (E runs a tenth of --operations). Results: DIR/<workload>/r<N>/{base,new}-run.json,
# DIR/load/r<N>/…, and DIR/ab.md (the table). CQL port $PORT (default 39142).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
base="" new="" workload=a,b,c,d,e,f records=100000 operations=100000 concurrency=16
repeat=2 out=/tmp/mosaic-ab
usage() { sed -n '2,17p' "$0" >&2; exit 2; }
while [ $# -gt 0 ]; do
    case $1 in
        --base) base=$2; shift 2 ;;
        --new) new=$2; shift 2 ;;
        --workload) workload=$2; shift 2 ;;
        --records) records=$2; shift 2 ;;
        --operations) operations=$2; shift 2 ;;
        --concurrency) concurrency=$2; shift 2 ;;
        --repeat) repeat=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        *) usage ;;
    esac
done
[ -n "$base" ] || usage
. "$root/bench/lib.sh"
if [ -z "$new" ]; then
    find_mosaic "$root"
    new=$mosaic
fi
for b in "$base" "$new"; do
    [ -x "$b" ] || { echo "no executable $b" >&2; exit 1; }
done
release=${CARGO_TARGET_DIR:-$root/target}/release
if [ -n "${BENCH:-}" ]; then
    read -r -a client <<<"$BENCH"
else
    client=("$release/mosaic-bench")
    [ -x "${client[0]}" ] || { echo "no ${client[0]}: cargo build --release -p mosaic-bench" >&2; exit 1; }
fi
port=${PORT:-39142}
require_free_ports "$port" $((port - 3000)) $((port - 2800))
workloads=(${workload//,/ })
mkdir -p "$out"

one() { # name binary repeat
    local name=$1 bin=$2 r=$3 cluster=$out/$1-cluster
    rm -rf "$cluster"
    "$bin" cluster up --nodes 1 --dir "$cluster" --port "$port" \
        --storage-port $((port - 3000)) --admin-port $((port - 2800)) >/dev/null
    trap '"$bin" cluster down --dir "$cluster" >/dev/null' EXIT
    local host=127.0.0.1:$port pid=$cluster/node1/pid
    mkdir -p "$out/load/r$r"
    "${client[@]}" load --hosts "$host" --workload "${workloads[0]}" --records "$records" \
        --concurrency "$concurrency" --pid-files "$pid" --quiet \
        --json "$out/load/r$r/$name-load.json" >"$out/load/r$r/$name-load.txt"
    for w in "${workloads[@]}"; do
        local ops=$operations
        [ "$w" = e ] && ops=$((operations / 10))
        mkdir -p "$out/$w/r$r"
        "${client[@]}" run --hosts "$host" --workload "$w" --records "$records" \
            --operations "$ops" --concurrency "$concurrency" --pid-files "$pid" --quiet \
            --json "$out/$w/r$r/$name-run.json" >"$out/$w/r$r/$name-run.txt"
        echo "   $name $w: $(grep -m1 -i 'ops/s\|throughput' "$out/$w/r$r/$name-run.txt" || true)"
    done
    "$bin" cluster down --dir "$cluster" >/dev/null
    trap - EXIT
    rm -rf "$cluster"
}

for r in $(seq 1 "$repeat"); do
    echo "== repeat $r of $repeat ($(uptime | sed 's/.*load/load/'))"
    if [ $((r % 2)) = 1 ]; then order="base new"; else order="new base"; fi
    for name in $order; do
        if [ "$name" = base ]; then one base "$base" "$r"; else one new "$new" "$r"; fi
    done
done

python3 - "$out" "${workloads[@]}" <<'EOF' | tee "$out/ab.md"
import json, statistics, sys
from pathlib import Path
out, workloads = Path(sys.argv[1]), sys.argv[2:]
def runs(w, name):
    return [json.loads(p.read_text()) for p in sorted((out / w).glob(f"r*/{name}-run.json"))]
def p99s(run):
    return [op["p99_us"] for op in run["operations"].values() if op.get("count")]
print("| workload | base ops/s | new ops/s | new/base | base worst p99 µs | new worst p99 µs | new/base |")
print("|---|---|---|---|---|---|---|")
for w in workloads:
    b, n = runs(w, "base"), runs(w, "new")
    if not b or not n:
        continue
    bt = statistics.median(r["throughput_ops"] for r in b)
    nt = statistics.median(r["throughput_ops"] for r in n)
    bp = statistics.median(max(p99s(r)) for r in b)
    np_ = statistics.median(max(p99s(r)) for r in n)
    print(f"| {w} | {bt:,.0f} | {nt:,.0f} | {nt / bt:.2f} | {bp:,.0f} | {np_:,.0f} | {np_ / bp:.2f} |")
EOF
