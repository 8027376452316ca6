#!/usr/bin/env bash
# Heterogeneous replicas (the HR paper's §5 on TPC-H `orders`), scaled to this machine: a
# local 3-node Mosaic cluster, RF 3, the table `tpch.orders` with clustering columns
# (custkey, orderdate, clerk, orderkey) in one partition, and --queries instances of the
# paper's Q1 and Q2 (half each, drawn from existing orders), run one at a time.
#
#   bench/hr.sh [--scale-factors "1 2 5"] [--queries N] [--seed N] [--write-sf SF]
#               [--write-reps N] [--out DIR]
#
# Per scale factor, on a fresh cluster:
#   tr        every replica in the best single expert order, (orderdate, clerk, custkey,
#             orderkey): Q1 reads its few rows, Q2 scans its 90-day window — the
#             configuration the paper calls TR
#   hr        `mosaic hr optimize --apply` over the same instances (HRCA), then the
#             re-layout (timed: relayout_s), then the same queries
#   auto      the cluster restarted (so no query is recorded yet), back to the TR orders
#             with 'auto': 'true' (cluster.hr_auto_interval_ms = 5000): the queries once
#             to be recorded (auto-recording: TR's orders still), the automatic change and
#             its re-layout awaited (auto_changed_after_s), then the queries again
#   recovery  node 3 stopped, its data wiped, started again and `mosaic repair`ed: the
#             seconds until its replicas are rebuilt (in their own orders)
# Then write throughput (--write-sf, 0.5; --write-reps, 2): loading the orders into a
# uniform table and into a heterogeneous one with three different orders, taking turns.
# Results land in DIR (/tmp/mosaic-hr) as JSON per step; bench/hr_summary.py DIR writes
# results.md. Needs a release build (cargo build --release -p mosaic-server -p
# mosaic-bench). CQL port $PORT (49042); the cluster directory is removed at the end
# unless KEEP=1.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
usage() { sed -n '2,28p' "$0" >&2; exit 2; }
sfs="1 2 5" queries=500 seed=1 out=/tmp/mosaic-hr write_sf=0.5 write_reps=2
while [ $# -gt 0 ]; do
    case $1 in
        --scale-factors) sfs=$2; shift 2 ;;
        --queries) queries=$2; shift 2 ;;
        --seed) seed=$2; shift 2 ;;
        --write-sf) write_sf=$2; shift 2 ;;
        --write-reps) write_reps=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        *) usage ;;
    esac
done
# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
if [ -n "${MOSAIC_BIN:-}" ]; then mosaic=$MOSAIC_BIN; else find_mosaic "$root"; fi
client="$(dirname "$mosaic")/mosaic-bench"
[ -x "$client" ] || { echo "no $client: cargo build --release -p mosaic-bench" >&2; exit 1; }
port=${PORT:-49042}
storage=$((port - 3000)) admin=$((port - 2800))
require_free_ports "$port"
nodes=3
cluster=$out/cluster
mkdir -p "$out"
down() { "$mosaic" cluster down --dir "$cluster" >/dev/null 2>&1 || true; }
finish() { down; [ "${KEEP:-0}" = 1 ] || rm -rf "$cluster"; }
trap finish EXIT
host="127.0.0.1:$port"
tr_orders="(orderdate, clerk, custkey, orderkey), (orderdate, clerk, custkey, orderkey), (orderdate, clerk, custkey, orderkey)"
layout="{'class': 'heterogeneous', 'replica_orders': '$tr_orders'}"

fresh() {
    down; rm -rf "$cluster"
    "$mosaic" cluster up --nodes "$nodes" --dir "$cluster" --port "$port" \
        --storage-port "$storage" --admin-port "$admin" \
        --set cluster.read_request_timeout_ms=120000 \
        --set cluster.hr_auto_interval_ms=5000 >/dev/null
}

cql() { # statement
    "$client" tpch exec --host "$host" --statement "$1"
}

# Seconds until no node has a re-layout under way and every node's trees of tpch.orders
# are in the orders the schema names.
wait_relayouts() {
    python3 - "$admin" "$nodes" <<'EOF'
import json, sys, time, urllib.request
admin, nodes = sys.argv[1], int(sys.argv[2])
start = time.time()
while True:
    busy = False
    for i in range(1, nodes + 1):
        with urllib.request.urlopen(f"http://127.0.0.{i}:{admin}/stats", timeout=30) as r:
            stats = json.load(r)
        for t in stats.get("tables", []):
            if t["table"] == "tpch.orders" and (t.get("stats") or {}).get("relayouts"):
                busy = True
    if not busy:
        print(f"{time.time() - start:.1f}")
        break
    time.sleep(1)
EOF
}

# Seconds until a node's trees of tpch.orders are in other orders than TR's (the auto pass
# applied new ones and the re-layout finished), or -1 after 300 s.
wait_auto() {
    python3 - "$admin" "$nodes" <<'EOF'
import json, sys, time, urllib.request
admin, nodes = sys.argv[1], int(sys.argv[2])
start = time.time()
tr = [1, 2, 0, 3]
while time.time() - start < 300:
    changed, busy = False, False
    for i in range(1, nodes + 1):
        with urllib.request.urlopen(f"http://127.0.0.{i}:{admin}/stats", timeout=30) as r:
            for t in json.load(r).get("tables", []):
                if t["table"] != "tpch.orders":
                    continue
                s = t.get("stats") or {}
                busy |= bool(s.get("relayouts"))
                changed |= any(x["order"] != tr for x in s.get("replica_trees", []))
    if changed and not busy:
        print(f"{time.time() - start:.1f}")
        sys.exit(0)
    time.sleep(1)
print(-1)
EOF
}

trees() { # out-json: every node's replica trees of tpch.orders
    python3 - "$admin" "$nodes" > "$1" <<'EOF'
import json, sys, urllib.request
admin, nodes = sys.argv[1], int(sys.argv[2])
out = {}
for i in range(1, nodes + 1):
    with urllib.request.urlopen(f"http://127.0.0.{i}:{admin}/stats", timeout=30) as r:
        for t in json.load(r).get("tables", []):
            if t["table"] == "tpch.orders":
                out[f"node{i}"] = t["stats"].get("replica_trees", [])
print(json.dumps(out))
EOF
}

run() { # name sf
    log "sf $2: $1 queries"
    "$client" tpch run --host "$host" --scale-factor "$2" --queries "$queries" \
        --seed "$seed" --json > "$out/sf$2-$1.json"
    trees "$out/sf$2-$1.trees.json"
}

compact() {
    "$mosaic" flush --host "127.0.0.1:$admin" >/dev/null
    "$mosaic" compact --host "127.0.0.1:$admin" >/dev/null
}

for sf in $sfs; do
    fresh
    log "sf $sf: load"
    "$client" tpch load --host "$host" --scale-factor "$sf" --layout "$layout" \
        --concurrency 64 > "$out/sf$sf-load.json"
    compact
    run tr "$sf"
    "$client" tpch workload --scale-factor "$sf" --queries "$queries" --seed "$seed" \
        > "$out/sf$sf-workload.txt"
    log "sf $sf: optimize --apply"
    "$mosaic" hr optimize tpch.orders --workload "$out/sf$sf-workload.txt" --apply \
        --host "127.0.0.1:$admin" > "$out/sf$sf-optimize.txt"
    relayout=$(wait_relayouts)
    echo "{\"relayout_s\": $relayout}" > "$out/sf$sf-relayout.json"
    compact
    run hr "$sf"
    log "sf $sf: auto"
    # Back to TR's orders with 'auto' on, after a restart: the nodes' recorded queries (of
    # the runs above) are gone, so the automatic change can only come from the queries
    # recorded below.
    "$mosaic" cluster down --dir "$cluster" >/dev/null
    "$mosaic" cluster up --nodes "$nodes" --dir "$cluster" >/dev/null
    cql "ALTER TABLE tpch.orders WITH layout = {'class': 'heterogeneous', 'replica_orders': '$tr_orders', 'auto': 'true'}"
    wait_relayouts >/dev/null
    compact
    run auto-recording "$sf"
    auto=$(wait_auto)
    echo "{\"auto_changed_after_s\": $auto}" > "$out/sf$sf-autowait.json"
    compact
    run auto "$sf"
    log "sf $sf: recovery"
    kill -9 "$(cat "$cluster/node3/pid")"
    while kill -0 "$(cat "$cluster/node3/pid")" 2>/dev/null; do sleep 0.1; done
    rm -rf "$cluster/node3/data"
    # Node 3 replaces itself at its address: it streams its ranges into trees in its
    # orders before it serves; the repair after it finds what the stream missed (nothing).
    start=$(date +%s.%N)
    "$mosaic" cluster add-node --dir "$cluster" --replace "127.0.0.3:$storage" >/dev/null
    "$mosaic" repair --host "127.0.0.3:$admin" > "$out/sf$sf-repair.txt"
    end=$(date +%s.%N)
    echo "{\"recovery_s\": $(echo "$end - $start" | bc)}" > "$out/sf$sf-recovery.json"
    trees "$out/sf$sf-recovered.trees.json"
done

log "write throughput at sf $write_sf"
for rep in $(seq 1 "$write_reps"); do
    for kind in $( [ $((rep % 2)) = 1 ] && echo uniform heterogeneous || echo heterogeneous uniform ); do
        fresh
        if [ "$kind" = uniform ]; then l="{'class': 'uniform'}"; else
            l="{'class': 'heterogeneous', 'replica_orders': '(orderdate, clerk, custkey, orderkey), (custkey, clerk, orderdate, orderkey), (clerk, orderdate, custkey, orderkey)'}"
        fi
        log "write: $kind $rep"
        "$client" tpch load --host "$host" --scale-factor "$write_sf" --layout "$l" \
            --concurrency 64 > "$out/write-$kind-$rep.json"
    done
done
log "done: $out"
