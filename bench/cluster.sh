#!/usr/bin/env bash
# The cluster benchmark: a local Mosaic cluster (5 nodes, RF 3 by default) loaded with YCSB
# records (10 fields x 100 bytes: ~1 KiB rows) and read back, at two write consistency
# levels, then the time a full-node recovery takes (a node's data wiped, the node replacing
# itself at its address, then `mosaic repair` on it).
#
#   bench/cluster.sh [--records N] [--nodes N] [--rf R] [--concurrency C] [--out DIR]
#
# For each write level (ONE, then THREE: every replica at RF 3) on a fresh cluster: `mosaic-bench
# load` at that level, then `mosaic-bench run` of workload C (reads only) at ONE over the same
# records. Then, on the last cluster: kill -9 node 3, delete its data directory, time its
# replacement of itself (`mosaic cluster add-node --replace`: it takes its identity from the
# cluster and streams its ranges before serving), then `mosaic repair --host` it. (That the
# rows are all back is what tests/python's cluster tests check, not this script.)
# Results (JSON per phase, the repair's report and timings) go to --out. Ports 29042/27000/
# 27199 on 127.0.0.1..N; the cluster directory is removed at the end unless KEEP=1.
set -euo pipefail
cd "$(dirname "$0")/.."

records=1000000 nodes=5 rf=3 concurrency=32 out=/tmp/mosaic-cluster-bench
while [ $# -gt 0 ]; do
  case "$1" in
    --records) records=$2; shift 2 ;;
    --nodes) nodes=$2; shift 2 ;;
    --rf) rf=$2; shift 2 ;;
    --concurrency) concurrency=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
bin="${MOSAIC_BIN:-${CARGO_TARGET_DIR:-target}/release/mosaic}"
[ -x "$bin" ] || { echo "build first: cargo build --release -p mosaic-server ($bin missing)" >&2; exit 1; }
bench="$(dirname "$bin")/mosaic-bench"
[ -x "$bench" ] || { echo "build first: cargo build --release -p mosaic-bench ($bench missing)" >&2; exit 1; }
port=29042 storage=27000 admin=27199
dir="$out/cluster"
mkdir -p "$out"
hosts=$(seq -s, -f "127.0.0.%g:$port" 1 "$nodes")

down() { "$bin" cluster down --dir "$dir" >/dev/null 2>&1 || true; }
trap down EXIT

pid_files() { local f=""; for i in $(seq 1 "$nodes"); do f="$f${f:+,}$dir/node$i/pid"; done; echo "$f"; }

for wcl in ONE THREE; do
  down; rm -rf "$dir"
  "$bin" cluster up --nodes "$nodes" --dir "$dir" --port $port --storage-port $storage --admin-port $admin
  echo "== load $records records at $wcl" >&2
  "$bench" load --hosts "$hosts" --records "$records" --rf "$rf" --write-cl "$wcl" \
    --concurrency "$concurrency" --pid-files "$(pid_files)" --quiet --json "$out/load-$wcl.json"
  echo "== read back at ONE" >&2
  "$bench" run --hosts "$hosts" --workload c --records "$records" --operations "$records" \
    --read-cl ONE --concurrency "$concurrency" --pid-files "$(pid_files)" --quiet \
    --json "$out/read-after-$wcl.json"
  du -sb "$dir" | awk '{print $1}' > "$out/disk-bytes-$wcl"
done

echo "== full-node recovery of node 3" >&2
"$bin" flush --host "127.0.0.1:$admin" >/dev/null
kill -9 "$(cat "$dir/node3/pid")"
while kill -0 "$(cat "$dir/node3/pid")" 2>/dev/null; do sleep 0.1; done
rm -rf "$dir/node3/data" "$dir/node3/pid"
start=$(date +%s.%N)
"$bin" cluster add-node --dir "$dir" --replace "127.0.0.3:$storage" >/dev/null
up=$(date +%s.%N)
"$bin" repair --host "127.0.0.3:$admin" | tee "$out/repair.txt"
done_at=$(date +%s.%N)
python3 - "$start" "$up" "$done_at" > "$out/recovery.json" <<'EOF'
import json, sys
start, up, done = map(float, sys.argv[1:])
print(json.dumps({"replace_s": round(up - start, 2), "repair_s": round(done - up, 2),
                  "total_s": round(done - start, 2)}))
EOF
cat "$out/recovery.json"
"$bin" stats --host "127.0.0.1:$admin" --json > "$out/stats.json"
[ "${KEEP:-0}" = 1 ] && trap - EXIT
echo "results in $out" >&2
