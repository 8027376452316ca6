#!/usr/bin/env bash
# Issue 14's bootstrap benchmark: the time to bootstrap a node that ends up holding G GiB,
# its streaming throughput against the disk's sequential write speed, and the p50/p99 of a
# YCSB B load at a fixed rate before and during the join; Mosaic and Apache Cassandra
# 4.1.10, one after the other, on the same machine.
#
#   bench/bootstrap.sh [--system mosaic|cassandra|both] [--gib G] [--nodes N] [--rf R]
#                      [--target-ops OPS] [--chunk-s S] [--before-s S] [--after-s S]
#                      [--settle-s S] [--concurrency C] [--load-concurrency C]
#                      [--stream-mib-per-s M] [--cassandra-heap 1G] [--out DIR]
#
# Defaults: both systems, G 2, N 3, RF 3, 1000 ops/s, 15 s chunks, 60 s before the join,
# 30 s after, 30 s settle, 32 in flight (load: 64), streaming throttles at 1000 MiB/s,
# DIR /tmp/mosaic-bootstrap.
#
# Sizing: YCSB records are ~1 KiB (10 fields x 100 bytes plus a ~24-byte key). After the
# join the N+1 nodes hold RF copies of the data, evenly shared, so the joining node holds
# RF/(N+1) of the logical data: the script loads G GiB x (N+1)/RF of records, i.e.
# G x 2^20 x (N+1) / RF records (N 3, RF 3: 4/3 G GiB, 1,398,102 records per GiB of G;
# N 1, RF 1: 2 G GiB). What the node really received is measured, not assumed.
#
# Per system: a fresh N-node cluster on 127.0.0.1..N (Mosaic: `mosaic cluster up --set
# cluster.stream_throughput_mib_per_sec=M`; Cassandra: bench/cassandra/cluster.sh with
# stream_throughput_outbound and entire_sstable_stream_throughput_outbound at M MiB/s:
# both unthrottled in practice), `mosaic-bench load` (keyspace `ycsb` at RF R, CL ONE),
# every node flushed (`mosaic flush`, `nodetool flush`), --settle-s of quiet; then a YCSB B
# load (`mosaic-bench run --workload b --rate OPS`, open loop, contact points nodes 1..N)
# runs as consecutive chunks of S seconds (OPS x S operations each; mosaic-bench reports a
# whole phase, not a window, so each chunk is one phase with its own read/update
# histograms); after --before-s the node N+1 is started (Mosaic: `mosaic cluster add-node`,
# which returns once the node serves CQL; Cassandra: cluster.sh up --nodes N+1,
# auto_bootstrap on by default, until the node serves CQL — Cassandra starts its native
# transport only after the join), and --after-s after it served the chunks stop. Bootstrap
# wall time = node start to CQL served; streaming time and bytes from each system's own
# report (Mosaic: the node's /netstats; Cassandra: its system.log's stream session lines)
# and the new node's data on disk (du). The disk's sequential write speed is measured first
# (dd, 2 GiB, O_DIRECT, fdatasync). The CPU seconds of the join are read from /proc: the old
# nodes' from the node's start to CQL served (streaming out, and serving the YCSB B load), the
# joining node's whole life until then. bench/bootstrap_summary.py then writes DIR/results.md
# and DIR/results.json: per system the times, MiB/s, ratios, and YCSB B p50/p99 of reads
# and updates before the join and during it (chunks that started before the join
# started, vs chunks that overlap the join; pooled over chunks from their latency CDFs).
#
# Needs the release binaries (`cargo build --release -p mosaic-server -p mosaic-bench`,
# $CARGO_TARGET_DIR or /tmp/target-release), copied to DIR/bin. Ports: $PORT (default
# 38042) CQL for Mosaic, PORT+1 for Cassandra; Mosaic internode PORT-3000, admin PORT-2800;
# Cassandra storage PORT-2000, JMX PORT-1900+i. Every node is stopped by pid at the end;
# the cluster directories are removed unless KEEP=1.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
system=both gib=2 nodes=3 rf=3 rate=1000 chunk_s=15 before_s=60 after_s=30 settle_s=30
concurrency=32 load_concurrency=64 stream_mib=1000 cassandra_heap=1G out=/tmp/mosaic-bootstrap
while [ $# -gt 0 ]; do
    case $1 in
        --system) system=$2; shift 2 ;;
        --gib) gib=$2; shift 2 ;;
        --nodes) nodes=$2; shift 2 ;;
        --rf) rf=$2; shift 2 ;;
        --target-ops) rate=$2; shift 2 ;;
        --chunk-s) chunk_s=$2; shift 2 ;;
        --before-s) before_s=$2; shift 2 ;;
        --after-s) after_s=$2; shift 2 ;;
        --settle-s) settle_s=$2; shift 2 ;;
        --concurrency) concurrency=$2; shift 2 ;;
        --load-concurrency) load_concurrency=$2; shift 2 ;;
        --stream-mib-per-s) stream_mib=$2; shift 2 ;;
        --cassandra-heap) cassandra_heap=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        *) sed -n '2,48p' "$0" >&2; exit 2 ;;
    esac
done
case $system in
    mosaic|cassandra) systems=("$system") ;;
    both) systems=(mosaic cassandra) ;;
    *) echo "--system mosaic|cassandra|both" >&2; exit 2 ;;
esac
[ "$rf" -le "$nodes" ] || { echo "--rf $rf exceeds --nodes $nodes" >&2; exit 2; }
# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
mkdir -p "$out"
out=$(cd "$out" && pwd)
release_binaries 0 "$root" "$out"
records=$(python3 -c "import math; print(math.ceil($gib * 2**20 * ($nodes + 1) / $rf))")
ops_per_chunk=$(python3 -c "print(max(1, round($rate * $chunk_s)))")
port=${PORT:-38042}
require_free_ports "$port" $((port + 1))
new=$((nodes + 1))
hosts_on() { seq -s, -f "127.0.0.%g:$1" 1 "$nodes"; }
pids_in() { local f="" i; for i in $(seq 1 "$nodes"); do f="$f${f:+,}$1/node$i/pid"; done; echo "$f"; }
now() { date +%s.%N; }
minus() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a - b }'; }
# CPU seconds (user + system) used so far by the processes whose pid files are given.
cpu_s() {
    local f pid ticks=0 t
    for f in "$@"; do
        pid=$(cat "$f" 2>/dev/null) || continue
        t=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | awk '{ print $12 + $13 }') || continue
        ticks=$((ticks + ${t:-0}))
    done
    awk -v t="$ticks" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", t / hz }'
}
listening() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

{
    env_header "$root"
    echo "command: bench/bootstrap.sh --system $system --gib $gib --nodes $nodes --rf $rf --target-ops $rate --chunk-s $chunk_s --before-s $before_s --after-s $after_s --settle-s $settle_s --concurrency $concurrency --load-concurrency $load_concurrency --stream-mib-per-s $stream_mib --cassandra-heap $cassandra_heap --out $out"
    echo "records: $records (G $gib GiB on the joining node x ($nodes+1)/$rf, 1 KiB a record)"
    echo "disk: $(df -h "$out" | awk 'NR==2 {print $1 " " $2 " (" $5 " used)"}') $(lsblk -ndo NAME,ROTA,MODEL "$(df "$out" | awk 'NR==2 {print $1}')" 2>/dev/null | tr -s ' ')"
} > "$out/env.txt"
cat "$out/env.txt" >&2

# The disk's sequential write speed, where the nodes' data goes: 2 GiB of zeroes, direct
# I/O, 1 MiB writes, fdatasync at the end (dd reports bytes and seconds).
disk_speed() {
    local f=$out/dd-test.bin line
    line=$(dd if=/dev/zero of="$f" bs=1M count=2048 oflag=direct conv=fdatasync 2>&1 | tail -n 1)
    rm -f "$f"
    echo "$line"
}
log "disk sequential write (dd, 2 GiB, O_DIRECT)"
disk_speed | tee "$out/disk-dd.txt" >&2

# nodetool, from the fetched jars, with the JVM flags the nodes run with (Java 17 needs
# their --add-exports/--add-opens).
cassandra_home="" jvm_flags=()
nodetool() { # jmx-port args...
    local p=$1; shift
    java -Xmx256m "${jvm_flags[@]}" -cp "$cassandra_home/lib/*" org.apache.cassandra.tools.NodeTool \
        -h 127.0.0.1 -p "$p" "$@"
}

# Runs YCSB B chunks until $1/stop exists; one line per chunk in $1/chunks.tsv (index,
# start, end in epoch seconds), each chunk's report in $1/chunk-I.{json,txt}.
chunks() { # dir host pidfiles
    local dir=$1 host=$2 pidfiles=$3 i=0 s e
    while [ ! -e "$dir/stop" ]; do
        i=$((i + 1))
        s=$(now)
        "$bench" run --hosts "$host" --workload b --records "$records" \
            --operations "$ops_per_chunk" --rate "$rate" --concurrency "$concurrency" \
            --seed "$i" --quiet --json "$dir/chunk-$i.json" > "$dir/chunk-$i.txt" 2>&1 \
            || echo "chunk $i failed (exit $?)" >> "$dir/chunks-failed.txt"
        e=$(now)
        printf '%s\t%s\t%s\n' "$i" "$s" "$e" >> "$dir/chunks.tsv"
    done
}

cluster_down() { # system cluster-dir
    case $1 in
        mosaic) "$mosaic" cluster down --dir "$2" || true ;;
        cassandra) "$root/bench/cassandra/cluster.sh" down --dir "$2" || true ;;
    esac
}

chunk_pid=
current=
cleanup() {
    if [ -n "$chunk_pid" ]; then kill "$chunk_pid" 2>/dev/null || true; wait "$chunk_pid" 2>/dev/null || true; fi
    if [ -n "$current" ]; then cluster_down "${current%%:*}" "${current#*:}"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

for sys in "${systems[@]}"; do
    dir=$out/$sys
    cluster=$dir/cluster
    rm -rf "$dir"
    mkdir -p "$dir"
    current=$sys:$cluster
    log "$sys: $nodes nodes, RF $rf, $records records"
    case $sys in
        mosaic)
            cport=$port admin=$((port - 2800))
            "$mosaic" cluster up --nodes "$nodes" --dir "$cluster" --port "$cport" \
                --storage-port $((port - 3000)) --admin-port "$admin" \
                --set "cluster.stream_throughput_mib_per_sec=$stream_mib"
            ;;
        cassandra)
            cport=$((port + 1)) jmx=$((port - 1900))
            cassandra_home=$("$root/bench/cassandra/fetch.sh")
            mapfile -t jvm_flags < <(grep -v -e '^#' -e '^[[:space:]]*$' "$root/bench/cassandra/jvm17.options" \
                | grep -e '^--add' | sed -E 's/^(--[a-z-]+) /\1=/')
            cat > "$dir/stream.yaml" <<YAML
stream_throughput_outbound: ${stream_mib}MiB/s
entire_sstable_stream_throughput_outbound: ${stream_mib}MiB/s
YAML
            "$root/bench/cassandra/cluster.sh" up --nodes "$nodes" --dir "$cluster" \
                --port "$cport" --storage-port $((port - 2000)) --jmx-port "$jmx" \
                --heap "$cassandra_heap" --yaml-extra "$dir/stream.yaml"
            ;;
    esac
    host=$(hosts_on "$cport")
    pidfiles=$(pids_in "$cluster")

    log "$sys: load"
    t0=$(now)
    "$bench" load --hosts "$host" --workload b --records "$records" --rf "$rf" \
        --concurrency "$load_concurrency" --pid-files "$pidfiles" --quiet \
        --json "$dir/load.json" | tee "$dir/load.txt"
    t1=$(now)
    log "$sys: flush"
    case $sys in
        mosaic) "$mosaic" flush --host "127.0.0.1:$admin" > "$dir/flush.txt" ;; # every node
        cassandra) for i in $(seq 1 "$nodes"); do nodetool $((jmx + i)) flush ycsb; done > "$dir/flush.txt" 2>&1 ;;
    esac
    t2=$(now)
    printf '{"load_s": %s, "flush_s": %s}\n' "$(minus "$t1" "$t0")" "$(minus "$t2" "$t1")" > "$dir/load-times.json"
    log "$sys: settle ${settle_s} s"
    sleep "$settle_s"
    for i in $(seq 1 "$nodes"); do
        echo "node$i $(du -sb "$cluster/node$i" | cut -f1)"
    done > "$dir/du-before.txt"
    if [ "$sys" = cassandra ]; then
        nodetool $((jmx + 1)) status > "$dir/status-before.txt" 2>&1 || true
        nodetool $((jmx + 1)) compactionstats > "$dir/compactionstats-before.txt" 2>&1 || true
    else
        "$mosaic" status --host "127.0.0.1:$admin" > "$dir/status-before.txt" 2>&1 || true
    fi

    log "$sys: YCSB B at $rate ops/s in ${chunk_s} s chunks; join after ${before_s} s"
    chunks "$dir" "$host" "$pidfiles" &
    chunk_pid=$!
    sleep "$before_s"

    log "$sys: node $new joins"
    sources_cpu0=$(cpu_s $(seq -f "$cluster/node%g/pid" 1 "$nodes"))
    join_start=$(now)
    case $sys in
        mosaic)
            "$mosaic" cluster add-node --dir "$cluster" \
                --set "cluster.stream_throughput_mib_per_sec=$stream_mib" > "$dir/add-node.txt" 2>&1 &
            joiner=$!
            # /netstats of the joining node, once a second (the last one is its final report).
            while kill -0 "$joiner" 2>/dev/null; do
                curl -sf "http://127.0.0.$new:$admin/netstats" > "$dir/netstats.tmp" 2>/dev/null \
                    && mv "$dir/netstats.tmp" "$dir/netstats-during.json"
                sleep 1
            done
            wait "$joiner" || { echo "add-node failed:" >&2; cat "$dir/add-node.txt" >&2; exit 1; }
            join_end=$(now)
            curl -sf "http://127.0.0.$new:$admin/netstats" > "$dir/netstats.json"
            "$mosaic" netstats --host "127.0.0.$new:$admin" > "$dir/netstats.txt" 2>&1 || true
            ;;
        cassandra)
            # cluster.sh waits up to 300 s for CQL; past that the node keeps joining, and the
            # wait goes on here.
            "$root/bench/cassandra/cluster.sh" up --nodes "$new" --dir "$cluster" \
                --port "$cport" --storage-port $((port - 2000)) --jmx-port "$jmx" \
                --heap "$cassandra_heap" --yaml-extra "$dir/stream.yaml" > "$dir/add-node.txt" 2>&1 || true
            until listening "127.0.0.$new" "$cport"; do
                if ! kill -0 "$(cat "$cluster/node$new/pid")" 2>/dev/null; then
                    echo "node$new exited while joining" >&2
                    tail -n 30 "$cluster/node$new/system.log" >&2 || true
                    exit 1
                fi
                sleep 0.2
            done
            join_end=$(now)
            nodetool $((jmx + new)) netstats > "$dir/netstats.txt" 2>&1 || true
            grep -E 'StreamResultFuture|StreamSession|StreamCoordinator|Bootstrap|bootstrap|JOINING' \
                "$cluster/node$new/system.log" > "$dir/stream-log.txt" || true
            ;;
    esac
    printf '{"join_start": %s, "join_end": %s, "bootstrap_s": %s}\n' \
        "$join_start" "$join_end" "$(minus "$join_end" "$join_start")" > "$dir/join.json"
    # CPU of the join: the old nodes' (streaming out, and serving the YCSB B load) from the
    # node's start to CQL served, and the joining node's whole life until then.
    printf '{"sources_cpu_s": %s, "joiner_cpu_s": %s}\n' \
        "$(minus "$(cpu_s $(seq -f "$cluster/node%g/pid" 1 "$nodes"))" "$sources_cpu0")" \
        "$(cpu_s "$cluster/node$new/pid")" > "$dir/cpu-join.json"
    log "$sys: node $new serves CQL after $(minus "$join_end" "$join_start") s"
    case $sys in
        mosaic) du -sb "$cluster/node$new/data" | cut -f1 > "$dir/du-new-node.txt" ;;
        cassandra) du -sb "$cluster/node$new/data/ycsb" | cut -f1 > "$dir/du-new-node.txt" ;;
    esac
    sleep "$after_s"
    touch "$dir/stop"
    wait "$chunk_pid" || true
    chunk_pid=
    for i in $(seq 1 "$new"); do
        echo "node$i $(du -sb "$cluster/node$i" | cut -f1)"
    done > "$dir/du-after.txt"
    if [ "$sys" = cassandra ]; then
        nodetool $((jmx + 1)) status > "$dir/status-after.txt" 2>&1 || true
    else
        "$mosaic" status --host "127.0.0.1:$admin" > "$dir/status-after.txt" 2>&1 || true
        grep -E 'bootstrap|ring status|stream' "$cluster/node$new/log" > "$dir/stream-log.txt" || true
    fi
    cat "$dir/status-after.txt"
    mkdir -p "$dir/logs"
    for i in $(seq 1 "$new"); do
        for f in log system.log; do
            [ ! -f "$cluster/node$i/$f" ] || cp "$cluster/node$i/$f" "$dir/logs/node$i-$f"
        done
    done
    cluster_down "$sys" "$cluster"
    current=
    # The logs the summary reads are copied above; the data (G GiB x (N+1) x ...) goes.
    [ "${KEEP:-0}" = 1 ] || rm -rf "$cluster"
done

python3 "$root/bench/bootstrap_summary.py" "$out"
