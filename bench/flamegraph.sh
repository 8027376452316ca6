#!/usr/bin/env bash
# CPU flame graphs of one node of a 3-node, RF 3 Mosaic cluster under mosaic-bench: the CQL
# write path (during the YCSB load) and the read path (during workload C), as SVG.
#
#   bench/flamegraph.sh [--records 100000] [--out docs/flamegraphs] [--seconds 5] [--folded DIR]
#
# Needs a release build (`cargo build --release -p mosaic-server -p mosaic-bench`), `perf`
# (linux-perf) and inferno (`cargo install inferno`). Stacks are unwound with DWARF
# (`perf record --call-graph dwarf`), so the release profile needs no frame pointers.
# Writes write-path-3node-rf3.svg and read-path-3node-rf3.svg under --out, and the two runs'
# reports (CPU per operation included) beside them as .txt; --folded DIR also keeps the
# folded stacks (inferno-collapse-perf's output, for scripts that break the time down).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
records=100000 out=$root/docs/flamegraphs seconds=5 folded=
while [ $# -gt 0 ]; do
    case $1 in
        --records) records=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --seconds) seconds=$2; shift 2 ;;
        --folded) folded=$2; shift 2 ;;
        *) sed -n '2,12p' "$0" >&2; exit 2 ;;
    esac
done
. "$root/bench/lib.sh"
find_mosaic "$root"
find_bench "$root"
for tool in perf inferno-collapse-perf inferno-flamegraph; do
    command -v $tool >/dev/null || { echo "$tool is required" >&2; exit 1; }
done
port=${PORT:-39042}
require_free_ports "$port"
mkdir -p "$out"
dir=$(mktemp -d /tmp/mosaic-flame.XXXXXX)
"$mosaic" cluster up --nodes 3 --dir "$dir/cluster" --port "$port" \
    --storage-port $((port - 3000)) --admin-port $((port - 2800)) >/dev/null
trap '"$mosaic" cluster down --dir "$dir/cluster" >/dev/null; rm -rf "$dir"' EXIT
hosts=$(seq -s, -f "127.0.0.%g:$port" 1 3)
pids=$(seq -s, -f "$dir/cluster/node%g/pid" 1 3)
node1=$(cat "$dir/cluster/node1/pid")

# profile NAME TITLE PHASE-ARGS...: runs the phase and samples node 1 for --seconds in it.
profile() {
    local name=$1 title=$2; shift 2
    "$bench" "$@" --hosts "$hosts" --records "$records" --concurrency 64 --pid-files "$pids" \
        --quiet > "$out/$name.txt" 2>&1 &
    local client=$!
    sleep 2
    perf record -F 299 --call-graph dwarf,16384 -p "$node1" -o "$dir/$name.data" \
        -- sleep "$seconds" >/dev/null 2>&1
    wait $client
    perf script -i "$dir/$name.data" 2>/dev/null | inferno-collapse-perf > "$dir/$name.folded"
    inferno-flamegraph --title "$title" --minwidth 0.2 "$dir/$name.folded" > "$out/$name.svg"
    [ -z "$folded" ] || { mkdir -p "$folded" && cp "$dir/$name.folded" "$folded/"; }
    echo "$out/$name.svg"; grep -E "ops/s|CPU per" "$out/$name.txt"
}
profile write-path-3node-rf3 "Mosaic node 1 of 3 (RF 3), YCSB load: the CQL INSERT path" \
    load --rf 3
profile read-path-3node-rf3 "Mosaic node 1 of 3 (RF 3), YCSB C: the CQL SELECT-by-key path" \
    run --workload c --operations $((records * 3 / 2))
