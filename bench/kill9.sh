#!/usr/bin/env bash
# A node killed with kill -9 under load (issue 20): YCSB B (95% reads, 5% updates) at QUORUM
# on a 5-node cluster (RF 3), open loop at a fraction of the system's own saturation, while
# one node that is not the client's contact point is killed with SIGKILL; with speculative
# retry at the default (`speculative_retry = '99p'`) and off ('NONE'); on Mosaic and on
# Apache Cassandra 4.1.10 (bench/cassandra/cluster.sh), one cluster at a time.
#
#   bench/kill9.sh [--records 100000] [--sat-operations 60000] [--sat-concurrency 64]
#                  [--load 0.5] [--rate OPS] [--duration 90] [--kill-at 30]
#                  [--concurrency 2048] [--settle 15] [--rounds 1] [--settings 99p,NONE]
#                  [--systems mosaic,cassandra] [--nodes 5] [--rf 3] [--victim 5]
#                  [--heap 1G] [--out DIR] [--no-build]
#
# 1. Builds the release binaries (CARGO_TARGET_DIR, /tmp/target-release by default;
#    --no-build skips it) and copies `mosaic` and `mosaic-bench` to DIR/bin.
# 2. Per system in --systems order: a fresh --nodes-node cluster (Mosaic: `mosaic cluster
#    up` defaults — gossip every second, phi 8, as Cassandra's — CQL on 127.0.0.1..N:
#    $MOSAIC_PORT, 19800 by default, storage +10, admin +20; Cassandra: bench/cassandra/
#    cluster.sh, CQL on $CASSANDRA_PORT, 19850 by default, storage +10, JMX +20+i, --heap),
#    --records YCSB records loaded at QUORUM (`mosaic-bench load`, keyspace `ycsb` at RF
#    --rf). The client's only contact point is node 1 (the driver finds the others).
# 3. Saturation: `mosaic-bench run --workload b`, closed loop, --sat-concurrency in flight,
#    --sat-operations operations at QUORUM (also the warm-up: caches, Cassandra's JIT). The
#    open-loop rate is --load (0.5) times that throughput — each system at the same share
#    of its own saturation — unless --rate gives one rate for every system.
# 4. --rounds rounds; in each, every setting of --settings (the order alternating by round):
#    `ALTER TABLE ycsb.usertable WITH speculative_retry = '<setting>'`; then `mosaic-bench
#    run --workload b --rate R` for --duration s (R × duration operations, latency from each
#    operation's intended start, up to --concurrency in flight, QUORUM reads and updates);
#    --kill-at s after the client starts, `kill -9` of node --victim (its pid from the
#    cluster's pid file, checked to be a node of this script's cluster). The run goes on to
#    its end; then the node is restarted (`cluster up` starts the nodes not running) and the
#    cluster given --settle s (hints, the driver's reconnection) before the next run, so
#    every run starts with all nodes up. Mosaic's `mosaic_speculative_reads_total` (by
#    cause, summed over the surviving nodes' /metrics) is read before and after each run.
# 5. Writes DIR/results.md and DIR/results.json (bench/kill9_summary.py): per system and
#    setting the rate, throughput achieved, read and update p99 over the whole run, errors
#    by kind, and from the client's per-second timeline the errors and worst one-second p99
#    before and after the kill, and the last second with an error.
# JSON per run in DIR/<system>/<setting>-<round>.json, the kill's timing beside it in
# <setting>-<round>.kill.json. Cluster directories are removed at the end unless KEEP=1.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
usage() { sed -n '2,41p' "$0" >&2; exit 2; }
records=100000 sat_operations=60000 sat_concurrency=64 load=0.5 rate= duration=90 kill_at=30
concurrency=2048 settle=15 rounds=1 settings=99p,NONE systems=mosaic,cassandra nodes=5 rf=3
victim=5 heap=1G out=/tmp/mosaic-kill9 build=1
while [ $# -gt 0 ]; do
    case $1 in
        --records) records=$2; shift 2 ;;
        --sat-operations) sat_operations=$2; shift 2 ;;
        --sat-concurrency) sat_concurrency=$2; shift 2 ;;
        --load) load=$2; shift 2 ;;
        --rate) rate=$2; shift 2 ;;
        --duration) duration=$2; shift 2 ;;
        --kill-at) kill_at=$2; shift 2 ;;
        --concurrency) concurrency=$2; shift 2 ;;
        --settle) settle=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        --settings) settings=$2; shift 2 ;;
        --systems) systems=$2; shift 2 ;;
        --nodes) nodes=$2; shift 2 ;;
        --rf) rf=$2; shift 2 ;;
        --victim) victim=$2; shift 2 ;;
        --heap) heap=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --no-build) build=0; shift ;;
        *) usage ;;
    esac
done
if [ "$victim" -lt 2 ] || [ "$victim" -gt "$nodes" ]; then
    echo "--victim must be a node other than 1 (the contact point), at most --nodes" >&2
    exit 2
fi
if [ "$kill_at" -ge "$duration" ]; then
    echo "--kill-at must be less than --duration" >&2
    exit 2
fi
# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
mkdir -p "$out/mosaic" "$out/cassandra"
out=$(cd "$out" && pwd)
release_binaries "$build" "$root" "$out"
mport=${MOSAIC_PORT:-19800} cport=${CASSANDRA_PORT:-19850}
require_free_ports "$mport" $((mport + 10)) $((mport + 20)) "$cport" $((cport + 10))
mcluster=$out/mosaic-cluster ccluster=$out/cassandra-cluster

stop_all() { stop_clusters "$mcluster" "$ccluster"; }
trap stop_all EXIT

{
    env_header "$root"
    echo "java: $(java -version 2>&1 | head -1)"
    echo "args: records=$records sat_operations=$sat_operations sat_concurrency=$sat_concurrency load=$load rate=${rate:-auto} duration=$duration kill_at=$kill_at concurrency=$concurrency settle=$settle rounds=$rounds settings=$settings systems=$systems nodes=$nodes rf=$rf victim=$victim heap=$heap"
} > "$out/env.txt"
cat "$out/env.txt"

port_of() { [ "$1" = mosaic ] && echo "$mport" || echo "$cport"; }
cluster_of() { [ "$1" = mosaic ] && echo "$mcluster" || echo "$ccluster"; }
now() { date +%s.%N; }

# Starts every node of the system's cluster that is not running (all of them for a new
# cluster) and returns once they serve CQL.
up() { # system
    case $1 in
        mosaic)
            "$mosaic" cluster up --nodes "$nodes" --dir "$mcluster" --port "$mport" \
                --storage-port $((mport + 10)) --admin-port $((mport + 20)) >/dev/null
            ;;
        cassandra)
            "$root/bench/cassandra/cluster.sh" up --nodes "$nodes" --dir "$ccluster" \
                --heap "$heap" --port "$cport" --storage-port $((cport + 10)) \
                --jmx-port $((cport + 20)) >/dev/null
            ;;
    esac
}

down() { # system
    case $1 in
        mosaic) "$mosaic" cluster down --dir "$mcluster" >/dev/null ;;
        cassandra) "$root/bench/cassandra/cluster.sh" down --dir "$ccluster" >/dev/null ;;
    esac
}

# Mosaic's speculative reads by cause, summed over the nodes but the victim (whose counters
# die with it), as `cause value` lines; nothing for Cassandra (its SpeculativeRetries table
# metric is only on JMX).
speculative_reads() { # system
    [ "$1" = mosaic ] || return 0
    local i
    for i in $(seq 1 "$nodes"); do
        [ "$i" = "$victim" ] && continue
        curl -s --max-time 5 "http://127.0.0.$i:$((mport + 20))/metrics" || true
    done | awk '/^mosaic_speculative_reads_total\{/ {
            match($0, /cause="[^"]*"/); c = substr($0, RSTART + 7, RLENGTH - 8); n[c] += $NF }
        END { for (c in n) print c, n[c] }'
}

# The victim's pid, if it is a running node of this script's cluster (never anyone else's).
victim_pid() { # system
    local cluster node pid
    cluster=$(cluster_of "$1") node=$(cluster_of "$1")/node$victim
    pid=$(cat "$node/pid")
    kill -0 "$pid" 2>/dev/null || { echo "node$victim (pid $pid) is not running" >&2; return 1; }
    tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q -- "$node/" \
        || { echo "pid $pid is not node$victim of $cluster" >&2; return 1; }
    echo "$pid"
}

cql() { # system statement
    "$bench" tpch exec --host "127.0.0.1:$(port_of "$1")" --statement "$2"
}

declare -A rate_of

prepare() { # system
    local system=$1 cluster sat
    cluster=$(cluster_of "$system")
    rm -rf "$cluster"
    log "$system: create and load $records records"
    up "$system"
    "$bench" load --hosts "127.0.0.1:$(port_of "$system")" --workload b --records "$records" \
        --rf "$rf" --write-cl QUORUM --concurrency 64 --quiet \
        --json "$out/$system/load.json" > "$out/$system/load.txt"
    log "$system: saturation, $sat_operations operations closed loop at $sat_concurrency in flight"
    "$bench" run --hosts "127.0.0.1:$(port_of "$system")" --workload b --records "$records" \
        --operations "$sat_operations" --read-cl QUORUM --write-cl QUORUM \
        --concurrency "$sat_concurrency" --seed 7 --quiet \
        --json "$out/$system/saturation.json" > "$out/$system/saturation.txt"
    sed -n '2p' "$out/$system/saturation.txt" >&2
    if [ -n "$rate" ]; then
        rate_of[$system]=$rate
    else
        sat=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["throughput_ops"])' \
            "$out/$system/saturation.json")
        rate_of[$system]=$(python3 -c 'import sys; print(max(1, int(float(sys.argv[1]) * float(sys.argv[2]))))' \
            "$sat" "$load")
    fi
    log "$system: open loop at ${rate_of[$system]} ops/s"
}

# One run: the setting, the open-loop client, the kill at --kill-at s, the restart.
measure() { # system setting round
    local system=$1 setting=$2 r=$3 name pid client launched t_kill t_end before after
    name=$2-$3
    log "round $r: $system speculative_retry = '$setting'"
    # Called as `measure … || …`, so errexit is off in here: every step checks itself.
    cql "$system" "ALTER TABLE ycsb.usertable WITH speculative_retry = '$setting'" || return 1
    before=$(speculative_reads "$system")
    pid=$(victim_pid "$system") || return 1
    launched=$(now)
    "$bench" run --hosts "127.0.0.1:$(port_of "$system")" --workload b --records "$records" \
        --operations $((${rate_of[$system]} * duration)) --rate "${rate_of[$system]}" \
        --read-cl QUORUM --write-cl QUORUM --concurrency "$concurrency" --seed $((r * 100 + 1)) \
        --quiet --json "$out/$system/$name.json" > "$out/$system/$name.txt" &
    client=$!
    sleep "$kill_at"
    t_kill=$(now)
    if kill -KILL "$pid"; then
        echo "killed node$victim (pid $pid) $kill_at s after the client's launch" >&2
    else
        echo "could not kill node$victim (pid $pid)" >&2
    fi
    local status=0
    wait "$client" || status=$?
    t_end=$(now)
    after=$(speculative_reads "$system")
    python3 - "$out/$system/$name.kill.json" "$launched" "$t_kill" "$t_end" "$victim" "$pid" \
        "${rate_of[$system]}" "$setting" "$status" "$before" "$after" <<'EOF'
import json, sys
path, launched, t_kill, t_end, victim, pid, rate, setting, status, before, after = sys.argv[1:]
def counts(text):
    return {c: float(n) for c, n in (l.split() for l in text.splitlines() if l.strip())}
b, a = counts(before), counts(after)
json.dump({"launched": float(launched), "killed": float(t_kill), "client_exited": float(t_end),
           "victim": int(victim), "victim_pid": int(pid), "rate": int(rate),
           "speculative_retry": setting, "client_status": int(status),
           "speculative_reads": {c: a.get(c, 0) - b.get(c, 0) for c in sorted(set(a) | set(b))}
                                if a or b else None},
          open(path, "w"), indent=1)
EOF
    sed -n '2,$p' "$out/$system/$name.txt" >&2 || true
    log "$system: restarting node$victim"
    up "$system" || return 1
    sleep "$settle"
    [ "$status" = 0 ] || { echo "round $r: $system $setting: the client exited $status" >&2; return 1; }
}

sets=(${settings//,/ })
for system in ${systems//,/ }; do
    prepare "$system"
    for r in $(seq 1 "$rounds"); do
        if [ $((r % 2)) = 1 ]; then list=("${sets[@]}"); else list=($(printf '%s\n' "${sets[@]}" | tac)); fi
        for setting in "${list[@]}"; do
            measure "$system" "$setting" "$r" || echo "round $r: $system $setting failed" >&2
        done
    done
    log "$system: stopping"
    down "$system"
done
stop_all
trap - EXIT
echo "finished: $(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/env.txt"
[ "${KEEP:-0}" = 1 ] || rm -rf "$mcluster" "$ccluster"

python3 "$root/bench/kill9_summary.py" "$out"
log "done: $out/results.md"
