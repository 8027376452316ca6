#!/usr/bin/env bash
# Hector's experiments (ICPP '23 §5), scaled to this machine: read-only YCSB at ONE, RF 3,
# on a local 3-node Mosaic cluster, one configuration after another on the same data (the
# nodes are stopped, their `[scheduling]` keys edited, and started again).
#
#   bench/hector.sh EXPERIMENT [--records N] [--operations N] [--reps N] [--rates R,R,...]
#                   [--duration S] [--concurrency N] [--cache-bytes N] [--out DIR]
#                   [--disk-mib-per-s W] [--disk-iops N] [--node-memory-mib M]
#                   [--queues Q,Q,...] [--set KEY=VALUE]...
#
# Experiments:
#   overhead  the read stage's cost: 1 KiB rows (--records, 200,000), zipfian reads, closed
#             loop (--concurrency 32): `read_concurrency = 0` (no stage: reads run where
#             they arrive) against the default stage (32 slots, fcfs), both with the dynamic
#             snitch, taking turns --reps times (3) with --operations reads (200,000) each
#   rml       local scheduling with heterogeneous items: 75% of the rows 1 KiB, 25% 1 MiB
#             (--records, 4,000), uniform keys, direct I/O with a 32 MiB block cache so
#             large reads go to the disk, 4 read slots off the network threads
#             (`read_concurrency = 4`, `engine_calls = "offload"`), reads tagged from a
#             static item-size oracle the load writes (64 KiB and more: priority 1),
#             `fcfs` against
#             `random-multi-level` (2 sub-queues, α = 10, Hector's setting), each over an
#             open-loop ramp of arrival rates (--rates, ops/s; --duration s each, 20).
#             --queues replaces the two with other variants, each a queue name followed by
#             `+KEY=VALUE` settings of [scheduling] (or `storage.KEY` of [storage]), e.g.
#             `random-multi-level+reserved_slots=1`; results are named by the variant
#   locality  replica selection and cache locality: 1 KiB rows (--records, 200,000),
#             direct I/O with a block cache per node of --cache-bytes (100 MiB: each node
#             holds every row, about twice the cache, and a third of them — the rows it is
#             primary for — would fit), closed loop (--concurrency 32), each run after
#             a warm-up of twice the records (the restart empties the caches), keys drawn from a Zipf law of
#             exponent 0.1 (nearly uniform) and 1.5 (very skewed): `dynamic-snitch`,
#             `popularity-aware` (popular keys round-robin, Hector's; and `local`) and
#             `c3`, taking turns --reps times (3), --operations
#             reads (200,000) each
#   instructions  the read stage's cost in instructions, which valgrind's callgrind counts
#             alike whatever else the machine does (this machine's run-to-run noise hides
#             2% of throughput): one node, RF 1, 1 KiB rows (--records, 20,000), the same
#             --operations zipfian reads (20,000) at 8 in flight with `read_concurrency = 0`
#             and with the default stage (32 slots, fcfs), --reps times (1); only the reads
#             are counted (callgrind zeroed before, dumped after). Needs valgrind.
#   smoke     overhead, rml and locality on a few records (checks the pipeline in minutes)
# The emulated disk-bound regime (BENCHMARKS.md, "DEPART in a disk-bound regime"; root
# and cgroup v1, see bench/lib.sh): --disk-mib-per-s and --disk-iops put each node on its
# own loop device throttled to W MiB/s and N IOPS (reads and writes each),
# --node-memory-mib bounds each node's RSS and page cache to M MiB (regime.txt records the
# limits, <run>.memory.txt each memory group after each run).
# Results land in DIR/<experiment>/ (bench JSON per run); bench/hector_summary.py
# DIR/<experiment> writes results.md and results.json (throughput ratios; per rate: the
# achieved throughput and latencies, saturation = the first rate not sustained to 95%).
# Needs a release build (cargo build --release -p mosaic-server -p mosaic-bench). CQL
# port $PORT (49042); the cluster directory is removed at the end unless KEEP=1.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
usage() { sed -n '2,41p' "$0" >&2; exit 2; }
[ $# -ge 1 ] || usage
experiment=$1; shift
records="" operations=200000 reps=3 rates="" duration=20 concurrency=32 cache=104857600
out=/tmp/mosaic-hector queues=fcfs,random-multi-level
DISK_MIB_PER_S=0 DISK_IOPS=0 NODE_MEMORY_MIB=0
common=()
while [ $# -gt 0 ]; do
    case $1 in
        --records) records=$2; shift 2 ;;
        --operations) operations=$2; ops_given=1; shift 2 ;;
        --reps) reps=$2; reps_given=1; shift 2 ;;
        --rates) rates=$2; shift 2 ;;
        --duration) duration=$2; shift 2 ;;
        --concurrency) concurrency=$2; shift 2 ;;
        --cache-bytes) cache=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --set) common+=("$2"); shift 2 ;;
        --queues) queues=$2; shift 2 ;;
        --disk-mib-per-s) DISK_MIB_PER_S=$2; shift 2 ;;
        --disk-iops) DISK_IOPS=$2; shift 2 ;;
        --node-memory-mib) NODE_MEMORY_MIB=$2; shift 2 ;;
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
dir=$out/$experiment
cluster=$dir/cluster
mkdir -p "$dir"
disk_regime_init "$dir"
down() { "$mosaic" cluster down --dir "$cluster" >/dev/null 2>&1 || true; }
# Nodes first (a mounted file system cannot go while they run), then the regime.
cleanup() { down; disk_regime_teardown; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
hosts=$(seq -s, -f "127.0.0.%g:$port" 1 "$nodes")

start() {
    local set=()
    for s in ${common[@]+"${common[@]}"}; do set+=(--set "$s"); done
    "$mosaic" cluster up --nodes "$nodes" --dir "$cluster" --port "$port" \
        --storage-port "$storage" --admin-port "$admin" ${cgroup_args[@]+"${cgroup_args[@]}"} \
        ${set[@]+"${set[@]}"} >/dev/null
    local i
    for i in $(seq 1 "$nodes"); do disk_regime_verify "$(cat "$cluster/node$i/pid")" "$i"; done
}

# A new cluster on fresh disks (a fresh regime when one is asked for).
fresh() {
    down; disk_regime_teardown; rm -rf "$cluster" "$cluster.disks"
    [ "$regime" = 0 ] || disk_regime_setup "$cluster" "$nodes"
    start
}

# Restarts the cluster with `[scheduling]` keys set: KEY=TOML-VALUE... (`sub.key` for a
# key of `[scheduling.sub]`, `storage.key` for one of `[storage]`).
reconfigure() {
    down
    set_keys "$@"
    start
}

# Sets `[scheduling]` keys in every node's config (see reconfigure).
set_keys() {
    local i kv key value
    for i in $(seq 1 "$nodes"); do
        for kv in "$@"; do
            key=${kv%%=*} value=${kv#*=}
            python3 - "$cluster/node$i/mosaic.toml" "$key" "$value" <<'EOF'
import re, sys
path, key, value = sys.argv[1:4]
# `sub.key` is a key of [scheduling.sub]; `storage.key` one of [storage].
if not key.startswith("storage."):
    key = "scheduling." + key
table, _, key = key.rpartition(".")
text = open(path).read()
section = re.search(rf"^\[{re.escape(table)}\]\n(.*?)(?=^\[|\Z)", text, re.S | re.M)
if section is None:
    text += f"\n[{table}]\n{key} = {value}\n"
else:
    body = section.group(1)
    line = re.compile(rf"^{re.escape(key)} = .*$", re.M)
    body = line.sub(lambda _: f"{key} = {value}", body) if line.search(body) else body + f"{key} = {value}\n"
    text = text[:section.start(1)] + body + text[section.end(1):]
open(path, "w").write(text)
EOF
        done
    done
}

bench() { # out-json phase args...
    local json=$1 phase=$2; shift 2
    echo "   $phase $(basename "$json" .json) ($(uptime | sed 's/.*load/load/'))" >&2
    "$client" "$phase" --hosts "$hosts" --records "$records" --quiet --json "$json" \
        --pid-files "$(seq -s, -f "$cluster/node%g/pid" 1 "$nodes")" "$@" > "${json%.json}.txt"
    # Each node's scheduling status (its read stage's counters) after the run (not while
    # instructions are being counted).
    [ -z "${NO_STATUS:-}" ] || return 0
    python3 - "$admin" "$nodes" > "${json%.json}.status.json" <<'EOF'
import json, sys, urllib.request
admin, nodes = sys.argv[1], int(sys.argv[2])
out = {}
for i in range(1, nodes + 1):
    with urllib.request.urlopen(f"http://127.0.0.{i}:{admin}/status", timeout=10) as r:
        out[f"node{i}"] = json.load(r)["scheduling"]
    # The engine's cache and disk reads since the node started.
    with urllib.request.urlopen(f"http://127.0.0.{i}:{admin}/stats", timeout=30) as r:
        out[f"node{i}"]["engine"] = json.load(r).get("engine")
print(json.dumps(out))
EOF
    [ "$NODE_MEMORY_MIB" = 0 ] || disk_regime_report "$nodes" > "${json%.json}.memory.txt"
}

overhead() {
    local row=(--field-count 1 --field-length 1000)
    fresh
    bench "$dir/load.json" load --workload c --rf 3 --concurrency 64 "${row[@]}"
    "$mosaic" flush --host "127.0.0.1:$admin" >/dev/null
    "$mosaic" compact --host "127.0.0.1:$admin" >/dev/null
    local rep name
    for rep in $(seq 1 "$reps"); do
        for name in $( [ $((rep % 2)) = 1 ] && echo none fcfs || echo fcfs none ); do
            if [ "$name" = none ]; then
                reconfigure read_concurrency=0
            else
                reconfigure read_concurrency=32 'local_queue="fcfs"'
            fi
            bench "$dir/$name-$rep.json" run --workload c --operations "$operations" \
                --concurrency "$concurrency" --read-cl ONE "${row[@]}"
        done
    done
}

rml() {
    local row=(--field-count 1 --field-length 1000 --large-fraction 0.25
        --large-field-length 1048576 --distribution uniform)
    common+=(storage.direct_io=true storage.block_cache_size_bytes=33554432
        storage.engine_calls=offload scheduling.read_concurrency=4)
    fresh
    bench "$dir/load.json" load --workload c --rf 3 --concurrency 8 "${row[@]}" \
        --size-oracle-file "$dir/sizes.txt"
    "$mosaic" flush --host "127.0.0.1:$admin" >/dev/null
    "$mosaic" compact --host "127.0.0.1:$admin" >/dev/null
    local rep variant queue rate order settings=()
    for rep in $(seq 1 "$reps"); do
        # Every other round in reverse order, so no variant always runs first.
        order=${queues//,/ }
        [ $((rep % 2)) = 1 ] || order=$(echo "$order" | tr ' ' '\n' | tac | tr '\n' ' ')
        for variant in $order; do
            queue=${variant%%+*}
            settings=()
            [ "$queue" = "$variant" ] || IFS=+ read -r -a settings <<< "${variant#"$queue"+}"
            # The keys a variant may set go back to their defaults first.
            reconfigure "local_queue=\"$queue\"" 'size_oracle="static"' \
                "static.file=\"$dir/sizes.txt\"" reserved_slots=0 \
                storage.block_cache_max_block_bytes=0 ${settings[@]+"${settings[@]}"}
            bench "$dir/$variant-$rep-warmup.json" run --workload c \
                --operations "$records" --concurrency 16 --read-cl ONE "${row[@]}"
            for rate in ${rates//,/ }; do
                bench "$dir/$variant-$rep-rate$rate.json" run --workload c \
                    --operations $((rate * duration)) --rate "$rate" \
                    --concurrency "$concurrency" --read-cl ONE "${row[@]}"
            done
        done
    done
}

locality() {
    local row=(--field-count 1 --field-length 1000)
    common+=(storage.direct_io=true "storage.block_cache_size_bytes=$cache")
    fresh
    bench "$dir/load.json" load --workload c --rf 3 --concurrency 64 "${row[@]}"
    "$mosaic" flush --host "127.0.0.1:$admin" >/dev/null
    "$mosaic" compact --host "127.0.0.1:$admin" >/dev/null
    local rep zipf policy
    for rep in $(seq 1 "$reps"); do
        for zipf in 0.1 1.5; do
            for policy in dynamic-snitch popularity-aware popularity-aware-local c3; do
                case $policy in
                    popularity-aware) reconfigure 'replica_selection="popularity-aware"' \
                        'popularity-aware.popular="round-robin"' ;;
                    popularity-aware-local) reconfigure 'replica_selection="popularity-aware"' \
                        'popularity-aware.popular="local"' ;;
                    *) reconfigure "replica_selection=\"$policy\"" ;;
                esac
                # The restart emptied the block caches: fill them first (twice the
                # records), then measure.
                bench "$dir/$policy-zipf$zipf-$rep-warmup.json" run --workload c \
                    --distribution "zipf:$zipf" --operations $((records * 2)) \
                    --concurrency "$concurrency" --read-cl ONE "${row[@]}"
                bench "$dir/$policy-zipf$zipf-$rep.json" run --workload c \
                    --distribution "zipf:$zipf" --operations "$operations" \
                    --concurrency "$concurrency" --read-cl ONE "${row[@]}"
            done
        done
    done
}

instructions() {
    command -v valgrind >/dev/null && command -v callgrind_control >/dev/null ||
        { echo "instructions needs valgrind and callgrind_control (apt-get install valgrind)" >&2; exit 1; }
    local row=(--field-count 1 --field-length 1000)
    fresh
    bench "$dir/load.json" load --workload c --rf 1 --concurrency 16 "${row[@]}"
    "$mosaic" flush --host "127.0.0.1:$admin" >/dev/null
    "$mosaic" compact --host "127.0.0.1:$admin" >/dev/null
    local rep name pid i ir
    : > "$dir/instructions.txt"
    for rep in $(seq 1 "$reps"); do
        for name in none fcfs; do
            down
            if [ "$name" = none ]; then
                set_keys read_concurrency=0
            else
                set_keys read_concurrency=32 'local_queue="fcfs"'
            fi
            rm -f "$dir/$name-$rep.cg"*
            valgrind --tool=callgrind --instr-atstart=no \
                --callgrind-out-file="$dir/$name-$rep.cg" \
                "$mosaic" server --config "$cluster/node1/mosaic.toml" \
                > "$dir/$name-$rep.valgrind.log" 2>&1 &
            pid=$!
            echo "$pid" > "$cluster/node1/pid"
            for i in $(seq 1 300); do
                python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" \
                    2>/dev/null && break
                kill -0 "$pid" 2>/dev/null || { cat "$dir/$name-$rep.valgrind.log" >&2; exit 1; }
                sleep 1
            done
            callgrind_control -i on "$pid" >/dev/null
            bench "$dir/$name-$rep-warmup.json" run --workload c \
                --operations $((operations / 10)) --concurrency 8 --read-cl ONE "${row[@]}"
            callgrind_control -z "$pid" >/dev/null
            NO_STATUS=1 bench "$dir/$name-$rep.json" run --workload c --operations "$operations" \
                --concurrency 8 --read-cl ONE "${row[@]}"
            callgrind_control -d "$pid" >/dev/null
            kill "$pid"; wait "$pid" || true
            ir=$(sed -n 's/^summary: *//p' "$dir/$name-$rep.cg.1" | head -1)
            echo "$name $rep $ir $operations" | tee -a "$dir/instructions.txt" >&2
        done
    done
    awk '{ ir[$1] += $3; ops[$1] += $4 }
         END { n = ir["none"] / ops["none"]; f = ir["fcfs"] / ops["fcfs"];
               printf "instructions per read: no stage %.0f, stage (fcfs x 32) %.0f, ratio %.4f\n", n, f, f / n }' \
        "$dir/instructions.txt" | tee "$dir/instructions.md"
}

case $experiment in
    locality)
        records=${records:-200000}
        locality ;;
    overhead)
        records=${records:-200000}
        overhead ;;
    instructions)
        records=${records:-20000} nodes=1
        [ -n "${ops_given:-}" ] || operations=20000
        [ -n "${reps_given:-}" ] || reps=1
        hosts="127.0.0.1:$port"
        instructions ;;
    rml)
        records=${records:-4000} rates=${rates:-100,200,300,400,600,800,1200}
        concurrency=$((concurrency > 256 ? concurrency : 256))
        rml ;;
    smoke)
        records=${records:-2000} operations=4000 reps=1
        overhead
        records=400 rates=${rates:-50,100} duration=5 concurrency=64
        rml
        records=4000 concurrency=32 cache=1048576
        common=()
        locality ;;
    *) echo "unknown experiment $experiment" >&2; exit 2 ;;
esac
down; disk_regime_teardown
[ "${KEEP:-0}" = 1 ] || rm -rf "$cluster" "$cluster.disks"
"$root/bench/hector_summary.py" "$dir"
