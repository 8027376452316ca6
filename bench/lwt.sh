#!/usr/bin/env bash
# Lightweight transactions and counters (issue 16): Mosaic against Apache Cassandra 4.1.10,
# both as 3-node clusters (RF 3) up side by side on this machine, with the same
# `mosaic-bench lwt` client.
#
#   bench/lwt.sh [--keys 100000] [--hot-keys 10] [--counter-keys 10000]
#                [--workloads uncontended,contended,counter] [--duration 20] [--warmup 5]
#                [--reps 3] [--concurrency 64] [--serial-cl SERIAL] [--commit-cl QUORUM]
#                [--counter-cl QUORUM] [--nodes 3] [--rf 3] [--heap 1G] [--out DIR]
#                [--no-build]
#
# 1. Builds the release binaries (CARGO_TARGET_DIR, /tmp/target-release by default:
#    `cargo build --release -p mosaic-server -p mosaic-bench`; --no-build skips it) and
#    copies `mosaic` and `mosaic-bench` to DIR/bin, so a rebuild elsewhere changes nothing.
# 2. Starts a Mosaic cluster in DIR/mosaic-cluster (`mosaic cluster up`: CQL on
#    127.0.0.1..N:$MOSAIC_PORT, 19900 by default; storage +10, admin +20) and a Cassandra
#    cluster in DIR/cassandra-cluster (bench/cassandra/cluster.sh: CQL on $CASSANDRA_PORT,
#    19950 by default; storage +10, JMX +20+i), both default configuration.
# 3. `mosaic-bench lwt load` on each: keyspace `lwtbench` (RF --rf), table
#    `t (k int PRIMARY KEY, v bigint)`, --keys rows by `INSERT … IF NOT EXISTS`.
# 4. --reps times, each workload on both systems one after the other (the first system
#    alternating by repetition): `mosaic-bench lwt run --workload W`, --warmup s not
#    counted, then --duration s measured, --concurrency requests in flight:
#      uncontended  UPDATE t SET v = ? WHERE k = ? IF v = ?  on keys each worker owns
#      contended    the same on --hot-keys keys shared by every worker
#      counter      UPDATE c SET n = n + 1 WHERE k = ?        on --counter-keys counters
#    transactions at --serial-cl (Paxos) and --commit-cl (commit), increments at
#    --counter-cl. Each run ends with its check (every key's change within what was
#    acknowledged and what failed). A run that fails is reported and left out.
# 5. Stops both clusters (by pid) and writes DIR/results.md and DIR/results.json: per
#    workload and system the median answered ops/s and p99 over the repetitions,
#    Mosaic/Cassandra of the medians and per repetition, applied / not applied / failed,
#    server CPU per operation, the checks, and the cores each run's cluster, the other
#    cluster and everything else used (from /proc, warm-up included).
# JSON per run in DIR/<system>/<workload>-<rep>.json. Cluster directories are removed at the
# end unless KEEP=1.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
usage() { sed -n '2,36p' "$0" >&2; exit 2; }
keys=100000 hot_keys=10 counter_keys=10000 workloads=uncontended,contended,counter
duration=20 warmup=5 reps=3 concurrency=64 serial_cl=SERIAL commit_cl=QUORUM
counter_cl=QUORUM nodes=3 rf=3 heap=1G out=/tmp/mosaic-lwt build=1
while [ $# -gt 0 ]; do
    case $1 in
        --keys) keys=$2; shift 2 ;;
        --hot-keys) hot_keys=$2; shift 2 ;;
        --counter-keys) counter_keys=$2; shift 2 ;;
        --workloads) workloads=$2; shift 2 ;;
        --duration) duration=$2; shift 2 ;;
        --warmup) warmup=$2; shift 2 ;;
        --reps) reps=$2; shift 2 ;;
        --concurrency) concurrency=$2; shift 2 ;;
        --serial-cl) serial_cl=$2; shift 2 ;;
        --commit-cl) commit_cl=$2; shift 2 ;;
        --counter-cl) counter_cl=$2; shift 2 ;;
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
release_binaries "$build" "$root" "$out"
mport=${MOSAIC_PORT:-19900} cport=${CASSANDRA_PORT:-19950}
require_free_ports "$mport" $((mport + 10)) $((mport + 20)) "$cport" $((cport + 10))
mkdir -p "$out/mosaic" "$out/cassandra"
mcluster=$out/mosaic-cluster ccluster=$out/cassandra-cluster

stop_all() { stop_clusters "$mcluster" "$ccluster"; }
trap stop_all EXIT

{
    env_header "$root"
    echo "java: $(java -version 2>&1 | head -1)"
    echo "args: keys=$keys hot_keys=$hot_keys counter_keys=$counter_keys workloads=$workloads duration=$duration warmup=$warmup reps=$reps concurrency=$concurrency serial_cl=$serial_cl commit_cl=$commit_cl counter_cl=$counter_cl nodes=$nodes rf=$rf heap=$heap"
} > "$out/env.txt"
cat "$out/env.txt"

rm -rf "$mcluster" "$ccluster"
log "starting Mosaic"
"$mosaic" cluster up --nodes "$nodes" --dir "$mcluster" --port "$mport" \
    --storage-port $((mport + 10)) --admin-port $((mport + 20)) >/dev/null
log "starting Cassandra"
"$root/bench/cassandra/cluster.sh" up --nodes "$nodes" --dir "$ccluster" --heap "$heap" \
    --port "$cport" --storage-port $((cport + 10)) --jmx-port $((cport + 20)) >/dev/null

hosts_of() { seq -s, -f "127.0.0.%g:$1" 1 "$nodes"; }
pids_of() { seq -s, -f "$1/node%g/pid" 1 "$nodes"; }

# One line of CPU jiffies: the machine's busy time (/proc/stat), then Mosaic's and
# Cassandra's nodes' (utime + stime of each node's process), and the time in centiseconds.
jiffies() {
    local busy m=0 c=0 f
    busy=$(awk '/^cpu / {print $2 + $3 + $4 + $7 + $8 + $9}' /proc/stat)
    for f in $(pids_of "$mcluster" | tr , ' '); do
        m=$((m + $(awk '{print $14 + $15}' "/proc/$(cat "$f")/stat")))
    done
    for f in $(pids_of "$ccluster" | tr , ' '); do
        c=$((c + $(awk '{print $14 + $15}' "/proc/$(cat "$f")/stat")))
    done
    echo "$busy $m $c $(date +%s%2N) $(getconf CLK_TCK)"
}

lwt() { # system out-json command args...
    local system=$1 json=$2 command=$3; shift 3
    local port=$mport cluster=$mcluster
    [ "$system" = cassandra ] && port=$cport cluster=$ccluster
    "$bench" lwt "$command" --hosts "$(hosts_of "$port")" --pid-files "$(pids_of "$cluster")" \
        --keys "$keys" --concurrency "$concurrency" --serial-cl "$serial_cl" \
        --commit-cl "$commit_cl" --quiet --json "$json" "$@" > "${json%.json}.txt"
}

# The counters need no load: their table is created by the first counter run.
if echo ",$workloads," | grep -qE ',(uncontended|contended),'; then
    for system in mosaic cassandra; do
        log "$system: load"
        lwt "$system" "$out/$system/load.json" load --rf "$rf"
        sed -n '2p;4,$p' "$out/$system/load.txt" | grep -v '^server disk' >&2 || true
    done
fi

for rep in $(seq 1 "$reps"); do
    for w in ${workloads//,/ }; do
        for system in $( [ $((rep % 2)) = 1 ] && echo mosaic cassandra || echo cassandra mosaic ); do
            log "rep $rep: $w on $system"
            jiffies > "$out/$system/$w-$rep.cpu"
            # A failed run (e.g. a statement one system refuses) is reported, not fatal.
            lwt "$system" "$out/$system/$w-$rep.json" run --workload "$w" \
                --hot-keys "$hot_keys" --counter-keys "$counter_keys" \
                --counter-cl "$counter_cl" --duration "$duration" --warmup "$warmup" \
                2> "$out/$system/$w-$rep.err" || { echo "run failed:" >&2; head -5 "$out/$system/$w-$rep.err" >&2; }
            jiffies >> "$out/$system/$w-$rep.cpu"
            sed -n '2p;4,$p' "$out/$system/$w-$rep.txt" | grep -v '^server disk' >&2 || true
        done
    done
done

log "stopping"
stop_all
trap - EXIT
[ "${KEEP:-0}" = 1 ] || rm -rf "$mcluster" "$ccluster"

python3 - "$out" <<'EOF'
import json, re, statistics, sys
from pathlib import Path
out = Path(sys.argv[1])
SYSTEMS = ("mosaic", "cassandra")
runs = {}  # workload -> system -> rep -> (report, cores)
for s in SYSTEMS:
    for p in sorted((out / s).glob("*-*.json")):
        m = re.fullmatch(r"(\w+)-(\d+)\.json", p.name)
        if not m:
            continue
        cores = None
        cpu = p.with_suffix(".cpu")
        if cpu.exists() and len(cpu.read_text().split("\n")) >= 2:
            b, a = ([float(x) for x in l.split()] for l in cpu.read_text().split("\n")[:2])
            secs, hz = (a[3] - b[3]) / 100, a[4]
            busy, mo, ca = ((a[i] - b[i]) / hz / secs for i in range(3))
            own = mo if s == "mosaic" else ca
            cores = {"measured": own, "idle": (ca if s == "mosaic" else mo), "else": busy - mo - ca}
        runs.setdefault(m[1], {}).setdefault(s, {})[int(m[2])] = (json.loads(p.read_text()), cores)
med = lambda xs: statistics.median(xs) if xs else None
fmt = lambda v, d=0: "—" if v is None else f"{v:,.{d}f}"
ms = lambda us: fmt(None if us is None else us / 1000, 1)
lines = ["# bench/lwt.sh results", "", "```", (out / "env.txt").read_text().strip(), "```", ""]
lines += ["## Load", "", "| system | rows/s | p99 ms | created | failed | server CPU µs/op |", "|---|---:|---:|---:|---:|---:|"]
result = {"workloads": {}, "load": {}}
for s in SYSTEMS:
    p = out / s / "load.json"
    if p.exists():
        r = json.loads(p.read_text())
        cpu = sum(r.get("cpu_us_per_op", {}).get("per_node", []) or [0])
        op = r["operations"].get("insert", {})
        result["load"][s] = {"ops_per_s": r["throughput_ops"], "p99_us": op.get("p99_us"), **r["lwt"]}
        lines.append(f"| {s} | {fmt(r['throughput_ops'])} | {fmt(op.get('p99_us', 0) / 1000, 1)} | {r['lwt']['created']:,} | {r['lwt']['failed']:,} | {fmt(cpu)} |")
lines += ["", "## Runs", "", "| workload | Mosaic ops/s | Cassandra ops/s | **Mosaic/Cassandra** | per repetition | Mosaic p99 ms | Cassandra p99 ms | **p99 Mosaic/Cassandra** | per repetition | bar met | applied / not applied / failed, Mosaic | … Cassandra | server CPU µs/op Mosaic / Cassandra | checks | cores (measured / idle / else) Mosaic; Cassandra |",
          "|---|---:|---:|---:|---|---:|---:|---:|---|---|---|---|---|---|---|"]
for w, by in runs.items():
    row, summary = {}, {}
    for s in SYSTEMS:
        reps = by.get(s, {})
        lw = {k: r["lwt"] for k, (r, _) in reps.items()}
        cpu = [sum(r.get("cpu_us_per_op", {}).get("per_node", []) or [0]) for r, _ in reps.values()]
        row[s] = {
            "reps": {k: {"ops_per_s": l["answered_per_s"], "p99_us": l["p99_us"], "applied": l["applied"],
                         "not_applied": l["not_applied"], "failed": l["failed"], "check_ok": reps[k][0]["check"]["ok"],
                         "errors_by_kind": reps[k][0].get("errors_by_kind", {}), "cores": reps[k][1]} for k, l in lw.items()},
            "ops_per_s": med([l["answered_per_s"] for l in lw.values()]),
            "p99_us": med([l["p99_us"] for l in lw.values()]),
            "cpu_us_per_op": med(cpu),
            "counts": [sum(l[f] for l in lw.values()) for f in ("applied", "not_applied", "failed")],
            "checks_ok": all(r["check"]["ok"] for r, _ in reps.values()),
        }
    m, c = row["mosaic"], row["cassandra"]
    common = sorted(set(m["reps"]) & set(c["reps"]))
    tr = [m["reps"][k]["ops_per_s"] / c["reps"][k]["ops_per_s"] for k in common if c["reps"][k]["ops_per_s"]]
    pr = [m["reps"][k]["p99_us"] / c["reps"][k]["p99_us"] for k in common if c["reps"][k]["p99_us"]]
    t = m["ops_per_s"] / c["ops_per_s"] if m["ops_per_s"] and c["ops_per_s"] else None
    p = m["p99_us"] / c["p99_us"] if m["p99_us"] and c["p99_us"] else None
    met = None if t is None or p is None else t >= 1 and p <= 1
    row.update(throughput_ratio=t, p99_ratio=p, throughput_ratio_per_rep=tr, p99_ratio_per_rep=pr, bar_met=met)
    result["workloads"][w] = row
    cores = lambda s: ", ".join("/".join(f"{v:.2f}" for v in x["cores"].values()) for x in row[s]["reps"].values() if x["cores"])
    lines.append(
        f"| {w} | {fmt(m['ops_per_s'])} | {fmt(c['ops_per_s'])} | **{fmt(t, 2)}×** | {', '.join(f'{x:.2f}' for x in tr)} "
        f"| {ms(m['p99_us'])} | {ms(c['p99_us'])} | **{fmt(p, 2)}** | {', '.join(f'{x:.2f}' for x in pr)} "
        f"| {'—' if met is None else 'yes' if met else 'NO'} | {' / '.join(f'{x:,}' for x in m['counts'])} | {' / '.join(f'{x:,}' for x in c['counts'])} "
        f"| {fmt(m['cpu_us_per_op'])} / {fmt(c['cpu_us_per_op'])} | {'ok' if m['checks_ok'] and c['checks_ok'] else 'FAILED'} "
        f"| {cores('mosaic')}; {cores('cassandra')} |")
(out / "results.json").write_text(json.dumps(result, indent=1) + "\n")
(out / "results.md").write_text("\n".join(lines) + "\n")
print("\n".join(lines))
EOF
log "done: $out/results.md"
