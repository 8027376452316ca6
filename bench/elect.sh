#!/usr/bin/env bash
# ELECT's experiments (FAST '24 §6), scaled to this machine: the `erasure-tiered` layout
# against `uniform` holding the same rows, each on a fresh local Mosaic cluster.
#
#   bench/elect.sh EXPERIMENT [--records N] [--operations N] [--nodes 6] [--rf 3]
#                  [--concurrency 32] [--alpha 0.6] [--k 4] [--routing shuffle|primary]
#                  [--reps 3] [--workloads c,a,b,d,e,f] [--out DIR] [--set KEY=VALUE]...
#
# Experiments (rows of 1 KiB: one field of 1000 bytes; zipfian requests):
#   storage   uniform, then erasure-tiered (k of k+2, α): load, `mosaic flush` and
#             `mosaic compact`, wait until the coding rounds stop changing anything
#             (every 5 s, 30 s unchanged: coding counters and the bytes of every tree,
#             so the secondaries' purge compactions are done too), then the hot tier (bytes under the keyspace's
#             table directories on every node), the cold tier and the total; YCSB C at ONE;
#             erasure-tiered only: two nodes killed, YCSB C at ONE again, twice (degraded
#             reads: the first pass decodes what it touches, the second finds it decoded)
#   ycsb      both layouts' clusters up side by side (the second on ports 10 higher):
#             each loaded and settled as in storage, then YCSB C, A, B, D, E, F taking
#             turns on the two clusters, --reps times (the first layout alternating), so
#             the machine's drift hits both alike; then the erasure-tiered cluster's
#             degraded C. The summary reports medians and per-repetition ratios.
#   alpha     erasure-tiered only, α = 0.1 … 0.9: storage and normal/degraded reads
#   k         erasure-tiered only, k = 4, 6, 8 with n = k + 2 (needs k + 2 nodes)
#   recovery  erasure-tiered only: storage, YCSB C, then node 3 wiped and replacing itself: the
#             time until it rebuilt its coding shards, then `mosaic repair` on it, then C
#   degraded  erasure-tiered only, as storage does it, twice: decoding lost tables ahead of
#             degraded reads off (cluster.degraded_read_ahead_tables=0, the default), then
#             on (2): degraded/normal latency of each pass with and without it
#   smoke     storage on 20,000 records (checks the pipeline in minutes)
# --routing primary sends each keyed request of the client to its key's primary replica
# (both layouts), and each scan to its start key's primary (the client computes the token:
# a driver cannot route `token(k) >= token(?)`), instead of the driver's default of a
# random replica of the key (scans: a random node). --workloads picks ycsb's workloads.
# Each configuration's results land in DIR/<experiment>/<config>/ (bench JSON per phase,
# `mosaic stats --json`, storage.json); bench/elect_summary.py DIR/<experiment> writes
# results.md and results.json. Needs a release build (cargo build --release -p
# mosaic-server -p mosaic-bench). CQL port $PORT (49042); the cluster directory is
# removed after each configuration unless KEEP=1.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
usage() { sed -n '2,37p' "$0" >&2; exit 2; }
[ $# -ge 1 ] || usage
experiment=$1; shift
records=1000000 operations=100000 nodes=6 rf=3 concurrency=32 alpha=0.6 k=4 routing=shuffle reps=3
workloads=c,a,b,d,e,f
out=/tmp/mosaic-elect
common=(cluster.erasure_coding_interval_ms=2000)
while [ $# -gt 0 ]; do
    case $1 in
        --records) records=$2; shift 2 ;;
        --operations) operations=$2; shift 2 ;;
        --nodes) nodes=$2; shift 2 ;;
        --rf) rf=$2; shift 2 ;;
        --concurrency) concurrency=$2; shift 2 ;;
        --alpha) alpha=$2; shift 2 ;;
        --k) k=$2; shift 2 ;;
        --routing) routing=$2; shift 2 ;;
        --reps) reps=$2; shift 2 ;;
        --workloads) workloads=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --set) common+=("$2"); shift 2 ;;
        *) usage ;;
    esac
done
mosaic=${MOSAIC_BIN:-${CARGO_TARGET_DIR:-$root/target}/release/mosaic}
[ -x "$mosaic" ] || { echo "no $mosaic: cargo build --release -p mosaic-server" >&2; exit 1; }
client="$(dirname "$mosaic")/mosaic-bench"
[ -x "$client" ] || { echo "no $client: cargo build --release -p mosaic-bench" >&2; exit 1; }
base=${PORT:-49042}
for p in "$base" $((base + 10)); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
        echo "127.0.0.1:$p is taken; set PORT" >&2; exit 1
    fi
done
dir=$out/$experiment
mkdir -p "$dir"
use_slot() { # slot: which cluster the functions below work on (0, or 1 side by side)
    cluster=$dir/cluster$1 port=$((base + 10 * $1))
    storage=$((port - 3000)) admin=$((port - 2800))
}
use_slot 0
down() { "$mosaic" cluster down --dir "$cluster" >/dev/null 2>&1 || true; }
trap 'use_slot 0; down; use_slot 1; down' EXIT
row=(--field-count 1 --field-length 1000)
extra=() # settings of the current configuration only

start() { # nodes: starts the cluster's nodes that are not running
    local set=()
    for s in "${common[@]}" "${extra[@]}"; do set+=(--set "$s"); done
    "$mosaic" cluster up --nodes "$1" --dir "$cluster" --port "$port" \
        --storage-port "$storage" --admin-port "$admin" "${set[@]}" >/dev/null
}

up() { # nodes: a fresh cluster
    down; rm -rf "$cluster"
    start "$1"
}

hosts_of() { seq -s, -f "127.0.0.%g:$port" 1 "$1"; }
pid_files() { local f=""; for i in $(seq 1 "$1"); do f="$f${f:+,}$cluster/node$i/pid"; done; echo "$f"; }

bench() { # nodes out-json phase args...
    local n=$1 json=$2 phase=$3; shift 3
    echo "   $phase $(basename "$json" .json) ($(uptime | sed 's/.*load/load/'))" >&2
    "$client" "$phase" --hosts "$(hosts_of "$n")" --records "$records" \
        --concurrency "$concurrency" --routing "$routing" --quiet --json "$json" "$@" \
        > "${json%.json}.txt"
}

# The coding counters of every node summed: coded, covered, cold parity, parity; then the
# bytes in every tree's tables.
coding_state() {
    "$mosaic" stats --host "127.0.0.1:$admin" --json | python3 -c '
import json, sys
total = [0, 0, 0, 0, 0]
for node in json.load(sys.stdin).values():
    for t in node.get("tables", []):
        s = t.get("stats") or {}
        for i, f in enumerate(["coded_bytes", "covered_keys", "cold_parity_bytes", "parity_bytes"]):
            total[i] += s.get(f, 0)
        for st in s.get("structures", []):
            total[4] += sum(level.get("bytes", 0) for level in st.get("levels", []))
print(" ".join(map(str, total)))'
}

# Waits until the coding rounds have stopped changing anything for 30 s (or 40 min).
converge() {
    local last="" same=0 waited=0 now
    while [ $same -lt 6 ] && [ $waited -lt 2400 ]; do
        sleep 5; waited=$((waited + 5))
        now=$(coding_state)
        if [ "$now" = "$last" ]; then same=$((same + 1)); else same=0; last=$now; fi
    done
    echo "   coding settled after ${waited}s: coded/covered/cold parity/parity/tree bytes = $now" >&2
}

# Bytes under keyspace ycsb's table directories (hot) and the cold tiers, every node.
measure() { # out-json nodes
    local hot=0 cold=0 i b
    for i in $(seq 1 "$2"); do
        b=$({ du -sb "$cluster/node$i/data/ycsb" 2>/dev/null || true; } | awk '{print $1}')
        hot=$((hot + ${b:-0}))
        b=$({ du -sb "$cluster/node$i/cold" 2>/dev/null || true; } | awk '{print $1}')
        cold=$((cold + ${b:-0}))
    done
    printf '{"hot_bytes": %d, "cold_bytes": %d}\n' "$hot" "$cold" > "$1"
    echo "   hot $hot cold $cold" >&2
}

# Waits until node 1 sees every node in $@ down.
wait_down() { # IPs of the killed nodes: until every other node sees each of them down
    python3 - "127.0.0.1:$admin" "$@" <<'EOF'
import json, sys, time, urllib.request
admin, dead = sys.argv[1], set(sys.argv[2:])
port = admin.rsplit(":", 1)[1]
def status(at):
    with urllib.request.urlopen(f"http://{at}/status", timeout=5) as r:
        return json.load(r)["nodes"]
live = [n["endpoint"].split(":")[0] for n in status(admin)]
live = [ip for ip in live if ip not in dead]
deadline = time.time() + 60
while time.time() < deadline:
    if all(not n["up"] for ip in live for n in status(f"{ip}:{port}")
           if n["endpoint"].split(":")[0] in dead):
        sys.exit(0)
    time.sleep(0.2)
sys.exit("nodes not seen down")
EOF
}

# Full-node recovery: node 3 is SIGKILLed, its data directory deleted, and it replaces itself
# at its address (`mosaic cluster add-node --replace`: streams what is replicated); timed
# until it has rebuilt its coding shards (its log says so), then `mosaic repair` on it; then
# YCSB C at ONE with every node up.
recover() { # dir nodes
    local d=$1 n=$2 victim=3 t0 t1 t2 t3 waited=0 shards
    local log=$cluster/node$victim/log
    kill -9 "$(cat "$cluster/node$victim/pid")"
    wait_down "127.0.0.$victim"
    rm -rf "$cluster/node$victim/data"
    t0=$(date +%s.%N)
    "$mosaic" cluster add-node --dir "$cluster" --replace "127.0.0.$victim:$storage" >/dev/null
    t1=$(date +%s.%N)
    until grep -rqs "coding shards lost with the data directory are rebuilt" "$log"; do
        sleep 0.2; waited=$((waited + 1))
        [ $waited -lt 6000 ] || { echo "node $victim did not rebuild its shards" >&2; return 1; }
    done
    t2=$(date +%s.%N)
    "$mosaic" repair --host "127.0.0.$victim:$admin" ycsb > "$d/repair.txt"
    t3=$(date +%s.%N)
    shards=$(grep -rhos "are rebuilt shards_rebuilt=[0-9]*" "$log" | tail -1 | sed 's/.*=//')
    python3 -c '
import json, sys
t0, t1, t2, t3 = map(float, sys.argv[1:5])
print(json.dumps({"start_s": t1 - t0, "rebuild_s": t2 - t0, "repair_s": t3 - t2,
                  "total_s": t3 - t0, "shards_rebuilt": int(sys.argv[5])}))' \
        "$t0" "$t1" "$t2" "$t3" "${shards:-0}" > "$d/recovery.json"
    echo "   recovery: $(cat "$d/recovery.json")" >&2
    bench "$n" "$d/c-recovered.json" run --workload c --operations "$operations" \
        --read-cl ONE "${row[@]}"
}

# Brings up the current slot's cluster with one layout (uniform | erasure-tiered), α and k,
# loads it, flushes and compacts it, waits for coding to settle, and measures storage.
prepare() { # dir layout alpha k
    local d=$1 layout=$2 a=$3 kk=$4
    local spec=$layout
    n=$nodes
    [ "$layout" = uniform ] || spec="erasure-tiered:ec_k=$kk,ec_n=$((kk + 2)),storage_saving_target=$a"
    [ "$layout" = uniform ] || [ "$n" -ge $((kk + 2)) ] || n=$((kk + 2))
    mkdir -p "$d"
    echo "== $experiment $(basename "$d"): $spec on $n nodes, RF $rf, $records rows" >&2
    up "$n"
    bench "$n" "$d/load.json" load --workload a --rf "$rf" --layout "$spec" --write-cl ONE "${row[@]}" \
        --pid-files "$(pid_files "$n")"
    "$mosaic" flush --host "127.0.0.1:$admin" >/dev/null
    "$mosaic" compact --host "127.0.0.1:$admin" >/dev/null
    [ "$layout" = uniform ] || converge
    measure "$d/storage.json" "$n"
    "$mosaic" stats --host "127.0.0.1:$admin" --json > "$d/stats.json"
}

# YCSB C at ONE with nodes 2 and 5 killed (degraded reads), twice: the first pass decodes
# the stripes its reads touch, the second finds most of them decoded.
degraded() { # dir
    kill -9 "$(cat "$cluster/node2/pid")" "$(cat "$cluster/node5/pid")"
    wait_down 127.0.0.2 127.0.0.5
    bench "$n" "$1/c-degraded.json" run --workload c --operations "$operations" \
        --read-cl ONE "${row[@]}"
    bench "$n" "$1/c-degraded-warm.json" run --workload c --operations "$operations" \
        --read-cl ONE "${row[@]}"
}

finish() { # the current slot's cluster goes
    down
    [ "${KEEP:-0}" = 1 ] || rm -rf "$cluster"
}

# One configuration: layout, α, k (see prepare); YCSB C; then degraded reads or, when
# $5 = recovery, full-node recovery.
config() { # dir layout alpha k [recovery]
    local d=$1 layout=$2
    prepare "$@"
    bench "$n" "$d/c.json" run --workload c --operations "$operations" --read-cl ONE "${row[@]}"
    if [ "${5:-}" = recovery ]; then
        recover "$d" "$n"
    elif [ "$layout" != uniform ]; then
        degraded "$d"
    fi
    finish
}

# YCSB A–F on both layouts side by side (see the header).
ycsb_side_by_side() {
    use_slot 0; prepare "$dir/uniform" uniform "$alpha" "$k"
    use_slot 1; prepare "$dir/erasure-tiered" erasure-tiered "$alpha" "$k"
    local rep w s ops
    for rep in $(seq 1 "$reps"); do
        for w in ${workloads//,/ }; do
            ops=$operations
            [ "$w" = e ] && ops=$((operations / 10))
            for s in $( [ $((rep % 2)) = 1 ] && echo 0 1 || echo 1 0 ); do
                use_slot "$s"
                local d=$dir/uniform
                [ "$s" = 1 ] && d=$dir/erasure-tiered
                bench "$n" "$d/$w-$rep.json" run --workload "$w" --operations "$ops" \
                    --read-cl ONE "${row[@]}"
            done
        done
    done
    use_slot 0; finish
    use_slot 1; degraded "$dir/erasure-tiered"; finish
}

case $experiment in
    smoke)
        records=20000 operations=20000
        config "$dir/uniform" uniform "$alpha" "$k"
        config "$dir/erasure-tiered" erasure-tiered "$alpha" "$k" ;;
    storage)
        config "$dir/uniform" uniform "$alpha" "$k"
        config "$dir/erasure-tiered" erasure-tiered "$alpha" "$k" ;;
    ycsb)
        ycsb_side_by_side ;;
    alpha)
        config "$dir/uniform" uniform "$alpha" "$k"
        for a in 0.1 0.3 0.5 0.6 0.7 0.9; do
            config "$dir/alpha-$a" erasure-tiered "$a" "$k"
        done ;;
    recovery)
        config "$dir/erasure-tiered" erasure-tiered "$alpha" "$k" recovery ;;
    degraded)
        extra=(cluster.degraded_read_ahead_tables=0)
        config "$dir/ahead-off" erasure-tiered "$alpha" "$k"
        extra=(cluster.degraded_read_ahead_tables=2)
        config "$dir/ahead-on" erasure-tiered "$alpha" "$k"
        extra=() ;;
    k)
        config "$dir/uniform" uniform "$alpha" "$k"
        for kk in 4 6 8; do config "$dir/k-$kk" erasure-tiered "$alpha" "$kk"; done ;;
    *) echo "unknown experiment $experiment" >&2; exit 2 ;;
esac
"$root/bench/elect_summary.py" "$dir"
