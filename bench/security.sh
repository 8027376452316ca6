#!/usr/bin/env bash
# What security costs (issue 21): YCSB A on Mosaic and on Apache Cassandra 4.1.10, each a
# 3-node cluster (RF 3), in three configurations of the same cluster and data:
#
#   plain  no logins, no TLS (both systems' defaults);
#   auth   password authentication and permission checks: Mosaic `[auth] authenticator =
#          "password"`; Cassandra PasswordAuthenticator + CassandraAuthorizer. The client
#          logs in as role `ycsb`, granted SELECT and MODIFY on keyspace `ycsb` (not a
#          superuser, so every statement goes through the permission checks);
#   tls    auth, plus TLS on the CQL port (TLS only: plaintext clients refused) and mutual
#          TLS between the nodes: Mosaic [client_encryption] + [internode_encryption];
#          Cassandra client_encryption_options (optional: false) + server_encryption_options
#          (internode_encryption: all, require_client_auth: true).
#
#   bench/security.sh [--records 100000] [--operations 40000] [--warmup 20000]
#                     [--concurrency 64] [--cl QUORUM] [--rounds 3] [--configs plain,auth,tls]
#                     [--systems mosaic,cassandra] [--nodes 3] [--rf 3] [--heap 1G]
#                     [--out DIR] [--no-build]
#
# 1. Builds the release binaries (CARGO_TARGET_DIR, /tmp/target-release by default;
#    --no-build skips it) and copies `mosaic` and `mosaic-bench` to DIR/bin.
# 2. Makes DIR/certs with openssl and keytool: a CA, one node certificate for every node
#    (RSA 2048, IP names 127.0.0.1..N, used as server and client certificate), as PEM
#    files for Mosaic and PKCS12 key and trust stores for Cassandra.
# 3. Per system, starts the cluster plain (Mosaic: `mosaic cluster up`, CQL on
#    127.0.0.1..N:$MOSAIC_PORT, 19700 by default; Cassandra: bench/cassandra/cluster.sh,
#    $CASSANDRA_PORT, 19750 by default), loads --records YCSB records (`mosaic-bench load`,
#    keyspace `ycsb` at RF --rf), restarts it with password authentication and creates the
#    `ycsb` role, and stops it.
# 4. --rounds rounds; in each, every configuration in --configs order (plain, auth, tls, plain,
#    auth, tls, …), each on both systems (the first system alternating by round): the
#    cluster is restarted in that configuration on the same data, `mosaic-bench run
#    --workload a` runs --warmup operations (not counted: caches, the JVM's JIT) and then
#    --operations measured, at --concurrency in flight and --cl for reads and writes
#    (QUORUM by default, so reads as well as writes cross the internode connections), and
#    the cluster stops. Only one cluster runs at a time.
# 5. Writes DIR/results.md and DIR/results.json: per system and configuration the median
#    throughput, read and update p99 and server CPU per operation over the rounds, and the
#    ratio of each to the same system's plain median (the cost of the setting), with the
#    per-round values.
# JSON per run in DIR/<system>/<config>-<round>.json. Cluster directories are removed at the
# end unless KEEP=1.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
usage() { sed -n '2,42p' "$0" >&2; exit 2; }
records=100000 operations=40000 warmup=20000 concurrency=64 cl=QUORUM rounds=3
configs=plain,auth,tls systems=mosaic,cassandra nodes=3 rf=3 heap=1G out=/tmp/mosaic-security
build=1
while [ $# -gt 0 ]; do
    case $1 in
        --records) records=$2; shift 2 ;;
        --operations) operations=$2; shift 2 ;;
        --warmup) warmup=$2; shift 2 ;;
        --concurrency) concurrency=$2; shift 2 ;;
        --cl) cl=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        --configs) configs=$2; shift 2 ;;
        --systems) systems=$2; shift 2 ;;
        --nodes) nodes=$2; shift 2 ;;
        --rf) rf=$2; shift 2 ;;
        --heap) heap=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --no-build) build=0; shift ;;
        *) usage ;;
    esac
done
# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
mkdir -p "$out/mosaic" "$out/cassandra"
out=$(cd "$out" && pwd)
release_binaries "$build" "$root" "$out"
mport=${MOSAIC_PORT:-19700} cport=${CASSANDRA_PORT:-19750}
require_free_ports "$mport" $((mport + 10)) $((mport + 20)) "$cport" $((cport + 10))
certs=$out/certs
mcluster=$out/mosaic-cluster ccluster=$out/cassandra-cluster
# The superusers: Cassandra's default (created at its first start with password
# authentication); Mosaic has no default, so it is given one.
msuper=cassandra:mosaic-bench-superuser csuper=cassandra:cassandra
role=ycsb role_password=ycsb-bench-pw

stop_all() { stop_clusters "$mcluster" "$ccluster"; }
trap stop_all EXIT

{
    env_header "$root"
    echo "java: $(java -version 2>&1 | head -1); openssl: $(openssl version)"
    echo "args: records=$records operations=$operations warmup=$warmup concurrency=$concurrency cl=$cl rounds=$rounds configs=$configs systems=$systems nodes=$nodes rf=$rf heap=$heap"
} > "$out/env.txt"
cat "$out/env.txt"

# --- certificates -------------------------------------------------------------------------
make_certs() {
    rm -rf "$certs"; mkdir -p "$certs"
    local ips
    ips=$(seq -s, -f "IP:127.0.0.%g" 1 "$nodes")
    (
        cd "$certs"
        openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 30 \
            -subj "/CN=mosaic-bench CA" 2>/dev/null
        openssl req -newkey rsa:2048 -nodes -keyout node.key -out node.csr \
            -subj "/CN=mosaic-bench node" 2>/dev/null
        printf '%s\n' "subjectAltName=$ips" "basicConstraints=CA:FALSE" \
            "keyUsage=digitalSignature,keyEncipherment" \
            "extendedKeyUsage=serverAuth,clientAuth" > node.ext
        openssl x509 -req -in node.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 30 \
            -extfile node.ext -out node.pem 2>/dev/null
        openssl pkcs12 -export -in node.pem -inkey node.key -certfile ca.pem -name node \
            -out keystore.p12 -passout pass:cassandra
        keytool -importcert -noprompt -alias ca -file ca.pem -keystore truststore.p12 \
            -storetype PKCS12 -storepass cassandra >/dev/null 2>&1
    )
    printf '%s\n' "mosaic-bench-superuser" > "$certs/superuser.pw"
    cat > "$certs/cassandra-tls.yaml" <<YAML
client_encryption_options:
  enabled: true
  optional: false
  keystore: $certs/keystore.p12
  keystore_password: cassandra
  store_type: PKCS12
  require_client_auth: false
server_encryption_options:
  internode_encryption: all
  keystore: $certs/keystore.p12
  keystore_password: cassandra
  truststore: $certs/truststore.p12
  truststore_password: cassandra
  store_type: PKCS12
  require_client_auth: true
  require_endpoint_verification: false
YAML
}

# --- clusters in a configuration ----------------------------------------------------------
hosts_of() { seq -s, -f "127.0.0.%g:$1" 1 "$nodes"; }
pids_of() { seq -s, -f "$1/node%g/pid" 1 "$nodes"; }

# Rewrites Mosaic's node configs for configuration $1, from the copies saved at creation
# (only the keys of [auth], [client_encryption] and [internode_encryption] change).
mosaic_configure() { # config
    local i
    for i in $(seq 1 "$nodes"); do
        python3 - "$1" "$mcluster/node$i/mosaic.plain.toml" "$mcluster/node$i/mosaic.toml" "$certs" <<'EOF'
import json, re, sys
config, src, dst, certs = sys.argv[1:]
want = {}
if config in ("auth", "tls"):
    want["auth"] = {"authenticator": "password",
                    "superuser_password_file": f"{certs}/superuser.pw"}
if config == "tls":
    files = {"certificate": f"{certs}/node.pem", "private_key": f"{certs}/node.key"}
    want["client_encryption"] = {"enabled": True, "optional": False, **files}
    want["internode_encryption"] = {"enabled": True, "truststore": f"{certs}/ca.pem", **files}
section, lines, seen = "", [], set()
for line in open(src).read().splitlines():
    m = re.match(r"\s*\[([^\]]+)\]\s*$", line)
    if m:
        section = m.group(1)
    else:
        k = re.match(r"\s*([A-Za-z0-9_]+)\s*=", line)
        if k and k.group(1) in want.get(section, {}):
            line = f"{k.group(1)} = {json.dumps(want[section][k.group(1)])}"
            seen.add((section, k.group(1)))
    lines.append(line)
missing = {(s, k) for s, kv in want.items() for k in kv} - seen
if missing:
    sys.exit(f"{src}: keys not found: {sorted(missing)}")
open(dst, "w").write("\n".join(lines) + "\n")
EOF
    done
}

up() { # system config
    case $1 in
        mosaic)
            mosaic_configure "$2"
            "$mosaic" cluster up --nodes "$nodes" --dir "$mcluster" --port "$mport" >/dev/null
            ;;
        cassandra)
            local args=()
            case $2 in
                auth) args=(--authenticator PasswordAuthenticator --authorizer CassandraAuthorizer) ;;
                tls) args=(--authenticator PasswordAuthenticator --authorizer CassandraAuthorizer
                           --yaml-extra "$certs/cassandra-tls.yaml") ;;
            esac
            "$root/bench/cassandra/cluster.sh" up --nodes "$nodes" --dir "$ccluster" \
                --heap "$heap" --port "$cport" --storage-port $((cport + 10)) \
                --jmx-port $((cport + 20)) "${args[@]}" >/dev/null
            ;;
    esac
}

down() { # system
    case $1 in
        mosaic) "$mosaic" cluster down --dir "$mcluster" >/dev/null ;;
        cassandra) "$root/bench/cassandra/cluster.sh" down --dir "$ccluster" >/dev/null ;;
    esac
}

port_of() { [ "$1" = mosaic ] && echo "$mport" || echo "$cport"; }
cluster_of() { [ "$1" = mosaic ] && echo "$mcluster" || echo "$ccluster"; }

# The client's login and TLS options for a configuration.
client_args() { # config
    case $1 in
        plain) ;;
        auth) echo "--username $role --password $role_password" ;;
        tls) echo "--username $role --password $role_password --ca-file $certs/ca.pem" ;;
    esac
}

# Runs one CQL statement as the system's superuser (auth configuration), retrying while
# the superuser is not there yet (Cassandra creates its default one some seconds after
# start).
as_superuser() { # system statement
    local super user pass
    super=$([ "$1" = mosaic ] && echo "$msuper" || echo "$csuper")
    user=${super%%:*} pass=${super#*:}
    for _ in $(seq 1 60); do
        if "$bench" tpch exec --host "127.0.0.1:$(port_of "$1")" --statement "$2" \
            --username "$user" --password "$pass" 2> "$out/$1/superuser.err"; then
            return 0
        fi
        sleep 2
    done
    echo "$1: '$2' failed:" >&2; cat "$out/$1/superuser.err" >&2; return 1
}

prepare() { # system
    local system=$1 cluster dir
    cluster=$(cluster_of "$system")
    rm -rf "$cluster"
    log "$system: create and load"
    case $system in
        mosaic)
            "$mosaic" cluster up --nodes "$nodes" --dir "$mcluster" --port "$mport" \
                --storage-port $((mport + 10)) --admin-port $((mport + 20)) >/dev/null
            for dir in "$mcluster"/node*; do cp "$dir/mosaic.toml" "$dir/mosaic.plain.toml"; done
            ;;
        cassandra) up cassandra plain ;;
    esac
    "$bench" load --hosts "$(hosts_of "$(port_of "$system")")" --workload a \
        --records "$records" --rf "$rf" --write-cl "$cl" --concurrency "$concurrency" \
        --quiet --json "$out/$system/load.json" > "$out/$system/load.txt"
    down "$system"
    log "$system: role $role"
    up "$system" auth
    as_superuser "$system" "CREATE ROLE IF NOT EXISTS $role WITH PASSWORD = '$role_password' AND LOGIN = true"
    as_superuser "$system" "GRANT SELECT ON KEYSPACE ycsb TO $role"
    as_superuser "$system" "GRANT MODIFY ON KEYSPACE ycsb TO $role"
    down "$system"
}

# One measured run: restart in the configuration, warm up, measure, stop.
measure() { # system config round
    local system=$1 config=$2 r=$3 hosts pids
    hosts=$(hosts_of "$(port_of "$system")") pids=$(pids_of "$(cluster_of "$system")")
    log "round $r: $system $config"
    up "$system" "$config"
    # shellcheck disable=SC2046
    "$bench" run --hosts "$hosts" --workload a --records "$records" --operations "$warmup" \
        --read-cl "$cl" --write-cl "$cl" --concurrency "$concurrency" --seed $((r * 100 + 1)) \
        --quiet $(client_args "$config") > "$out/$system/$config-$r.warmup.txt"
    # shellcheck disable=SC2046
    "$bench" run --hosts "$hosts" --workload a --records "$records" --operations "$operations" \
        --read-cl "$cl" --write-cl "$cl" --concurrency "$concurrency" --seed $((r * 100 + 2)) \
        --pid-files "$pids" --quiet --json "$out/$system/$config-$r.json" \
        $(client_args "$config") > "$out/$system/$config-$r.txt"
    sed -n '2p;4,$p' "$out/$system/$config-$r.txt" | grep -v '^server disk' >&2 || true
    down "$system"
}

make_certs
for system in ${systems//,/ }; do prepare "$system"; done
order=(${systems//,/ })
for r in $(seq 1 "$rounds"); do
    for config in ${configs//,/ }; do
        if [ $((r % 2)) = 1 ]; then list=("${order[@]}"); else list=($(printf '%s\n' "${order[@]}" | tac)); fi
        for system in "${list[@]}"; do
            measure "$system" "$config" "$r" || echo "round $r: $system $config failed" >&2
        done
    done
done
log "stopping"
stop_all
trap - EXIT
echo "finished: $(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/env.txt"
[ "${KEEP:-0}" = 1 ] || rm -rf "$mcluster" "$ccluster"

python3 "$root/bench/security_summary.py" "$out"
log "done: $out/results.md"
