#!/usr/bin/env bash
# A local Apache Cassandra 4.1.10 cluster on OpenJDK 17, for side-by-side benchmarks.
#
#   bench/cassandra/cluster.sh up   --nodes N --dir DIR [--port P] [--heap 1G]
#                                   [--storage-port 7000] [--jmx-port 7199]
#                                   [--authenticator AllowAllAuthenticator]
#                                   [--authorizer AllowAllAuthorizer] [--yaml-extra FILE]
#                                   [--cgroup DIR]
#   bench/cassandra/cluster.sh down --dir DIR
#
# `up` fetches Cassandra (fetch.sh, into ~/.cache/mosaic-bench), writes DIR/nodeI/{cassandra.yaml,
# data,commitlog,…} for node I on 127.0.0.I (CQL on port P, default 9042; storage port 7000; JMX on
# 7199+I; both bases can be moved), starts every node in the background (pid in DIR/nodeI/pid, output in
# DIR/nodeI/{system.log,stdout.log}), and returns once every node serves CQL. Node 1 is the seed.
# A fresh cluster skips the wait for gossip to settle and uses a 1 s ring delay.
# cassandra.yaml is rewritten at every `up`, so an `up` after `down` can change the
# authenticator and authorizer, and --yaml-extra appends a file's settings (keys the
# generated file does not set, e.g. client_encryption_options) to every node's.
# --cgroup DIR: node I's JVM joins that (existing) cgroup before it starts, `{node}` in DIR
# standing for I, so all it allocates and caches is charged there (bench/lib.sh's
# emulated disk-bound regime bounds a node's memory so).
# `down` stops the nodes by pid (SIGTERM, then SIGKILL after 60 s) and removes the pid files.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

usage() { sed -n '2,22p' "$0" >&2; exit 2; }
[ $# -ge 1 ] || usage
cmd=$1; shift
nodes=1 dir= port=9042 heap=1G storage_port=7000 jmx_port=7199
authenticator=AllowAllAuthenticator authorizer=AllowAllAuthorizer yaml_extra= cgroup=
while [ $# -gt 0 ]; do
    case $1 in
        --nodes) nodes=$2; shift 2 ;;
        --dir) dir=$2; shift 2 ;;
        --port) port=$2; shift 2 ;;
        --heap) heap=$2; shift 2 ;;
        --storage-port) storage_port=$2; shift 2 ;;
        --jmx-port) jmx_port=$2; shift 2 ;;
        --authenticator) authenticator=$2; shift 2 ;;
        --authorizer) authorizer=$2; shift 2 ;;
        --yaml-extra) yaml_extra=$2; shift 2 ;;
        --cgroup) cgroup=$2; shift 2 ;;
        *) usage ;;
    esac
done
[ -n "$dir" ] || usage
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

# Whether something accepts TCP connections on $1:$2.
listening() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

running() { [ -f "$1/pid" ] && kill -0 "$(cat "$1/pid")" 2>/dev/null; }

up() {
    home=$("$here/fetch.sh")
    # `--add-opens M/P=ALL-UNNAMED` lines become one argument each: `--add-opens=M/P=…`.
    mapfile -t jvm_flags < <(grep -v -e '^#' -e '^[[:space:]]*$' "$here/jvm17.options" \
        | sed -E 's/^(--[a-z-]+) /\1=/')
    for i in $(seq 1 "$nodes"); do
        node=$dir/node$i
        ip=127.0.0.$i
        if running "$node"; then
            echo "node$i: already running (pid $(cat "$node/pid"))"
            continue
        fi
        mkdir -p "$node"
        cat > "$node/cassandra.yaml" <<YAML
cluster_name: mosaic-bench
num_tokens: 16
allocate_tokens_for_local_replication_factor: 3
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
endpoint_snitch: SimpleSnitch
seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters:
      - seeds: "127.0.0.1:$storage_port"
listen_address: $ip
rpc_address: $ip
storage_port: $storage_port
native_transport_port: $port
start_native_transport: true
data_file_directories: [$node/data]
commitlog_directory: $node/commitlog
saved_caches_directory: $node/saved_caches
hints_directory: $node/hints
cdc_raw_directory: $node/cdc_raw
commitlog_sync: periodic
commitlog_sync_period: 10000ms
authenticator: $authenticator
authorizer: $authorizer
YAML
        if [ -n "$yaml_extra" ]; then cat "$yaml_extra" >> "$node/cassandra.yaml"; fi
        fresh=0
        [ -d "$node/data" ] || fresh=1
        attempt=1
        while :; do
            # The JVM runs detached from this shell; its pid is the node's pid. The subshell
            # joins the node's cgroup ("0": the writer itself) and becomes the JVM.
            (
                if [ -n "$cgroup" ]; then echo 0 > "${cgroup//\{node\}/$i}/cgroup.procs"; fi
                exec setsid java -Xms"$heap" -Xmx"$heap" "${jvm_flags[@]}" \
                -javaagent:"$home/lib/jamm-0.3.2.jar" \
                -Dcassandra.jmx.local.port=$((jmx_port + i)) \
                -Dcassandra.config="file://$node/cassandra.yaml" \
                -Dcassandra.storagedir="$node" \
                -Dcassandra.logdir="$node" \
                -Dlogback.configurationFile="$here/logback.xml" \
                -Dcassandra.skip_wait_for_gossip_to_settle=0 \
                -Dcassandra.ring_delay_ms=1000 \
                -Dcassandra-foreground=yes \
                -cp "$home/lib/*" org.apache.cassandra.service.CassandraDaemon
            ) > "$node/stdout.log" 2>&1 < /dev/null &
            echo $! > "$node/pid"
            echo "node$i: pid $!, CQL on $ip:$port, JMX on $((jmx_port + i)), dir $node"
            # Nodes join one at a time, as Cassandra requires of bootstrapping nodes.
            deadline=$((SECONDS + 300))
            failed=0
            until listening "$ip" "$port"; do
                if ! running "$node"; then
                    # A fresh node's bootstrap sometimes gives up on the seed it has gossiped
                    # with ("Unable to contact any seeds", seen on this loaded 2-core machine):
                    # it never joined, so it starts again from nothing, twice at most.
                    if [ "$fresh" = 1 ] && [ "$attempt" -lt 3 ] \
                        && grep -q "Unable to contact any seeds" "$node/system.log" 2>/dev/null; then
                        echo "node$i: bootstrap found no seed (attempt $attempt); starting it again" >&2
                        rm -rf "$node/data" "$node/commitlog" "$node/saved_caches" "$node/hints" "$node/cdc_raw"
                        mv "$node/system.log" "$node/system.log.attempt$attempt" 2>/dev/null || true
                        attempt=$((attempt + 1))
                        failed=1
                        sleep 5
                        break
                    fi
                    echo "node$i exited; last lines of $node/system.log:" >&2
                    tail -n 20 "$node/stdout.log" "$node/system.log" >&2 || true
                    exit 1
                fi
                if [ $SECONDS -ge $deadline ]; then
                    echo "node$i does not serve CQL after 300 s" >&2
                    exit 1
                fi
                sleep 1
            done
            [ "$failed" = 1 ] || break
        done
        echo "node$i: serving CQL after ${SECONDS} s"
    done
}

down() {
    for node in "$dir"/node*; do
        [ -f "$node/pid" ] || continue
        pid=$(cat "$node/pid")
        if kill -0 "$pid" 2>/dev/null; then
            kill -TERM "$pid"
            for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
            if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid"; fi
            echo "$(basename "$node"): stopped (pid $pid)"
        fi
        rm -f "$node/pid"
    done
}

case $cmd in
    up) up ;;
    down) down ;;
    *) usage ;;
esac
