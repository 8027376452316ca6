# Shared by the bench scripts (sourced, not run): the release binaries and free ports.

# Sets $mosaic to the release `mosaic` binary under $CARGO_TARGET_DIR (or $1/target), or
# exits with how to build it.
find_mosaic() { # repo-root
    mosaic=${CARGO_TARGET_DIR:-$1/target}/release/mosaic
    [ -x "$mosaic" ] || { echo "no $mosaic: cargo build --release -p mosaic-server" >&2; exit 1; }
}

# Sets $bench to the release `mosaic-bench` binary (the load generator) beside it, or exits
# with how to build it.
find_bench() { # repo-root
    bench=${CARGO_TARGET_DIR:-$1/target}/release/mosaic-bench
    [ -x "$bench" ] || { echo "no $bench: cargo build --release -p mosaic-bench" >&2; exit 1; }
}

# Builds the release `mosaic` and `mosaic-bench` (unless $1 is 0) under $CARGO_TARGET_DIR
# (/tmp/target-release by default) and copies them to $3/bin, so a rebuild elsewhere during
# the run changes nothing; sets $mosaic and $bench to the copies.
release_binaries() { # build repo-root out
    export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/tmp/target-release}
    if [ "$1" = 1 ]; then
        (cd "$2" && cargo build --release -p mosaic-server -p mosaic-bench)
    fi
    find_mosaic "$2"
    find_bench "$2"
    mkdir -p "$3/bin"
    cp "$mosaic" "$bench" "$3/bin/"
    mosaic=$3/bin/mosaic bench=$3/bin/mosaic-bench
}

# Exits unless every given port on 127.0.0.1 is free: a node already listening there
# (someone else's) would answer in place of ours.
require_free_ports() { # port...
    local p
    for p in "$@"; do
        if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
            echo "127.0.0.1:$p is taken; set PORT" >&2
            exit 1
        fi
    done
}

# A progress line on stderr, with the time and the machine's load average.
log() { echo "== $* ($(date +%T), $(uptime | sed 's/.*load/load/'))" >&2; }

# The first lines of a run's env.txt: the commit the tree at $1 is (an exported tree, from
# `git archive`, names its commit in $MOSAIC_COMMIT), when, and on what machine.
env_header() { # repo-root
    if git -C "$1" rev-parse HEAD >/dev/null 2>&1; then
        echo "commit: $(git -C "$1" rev-parse HEAD)$(git -C "$1" diff --quiet HEAD -- crates bench || echo ' (with uncommitted changes)')"
    else
        echo "commit: ${MOSAIC_COMMIT:-unknown} (exported tree)"
    fi
    echo "started: $(date -u +%FT%TZ)"
    echo "machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(free -g | awk '/Mem:/ {print $2}') GiB RAM, load average at start $(cut -d' ' -f1-3 /proc/loadavg)"
}

# Stops a local Mosaic cluster (with $mosaic) and a Cassandra one (bench/cassandra/cluster.sh)
# by their pid files, whichever exist; never fails (for an EXIT trap).
stop_clusters() { # mosaic-cluster-dir cassandra-cluster-dir
    "$mosaic" cluster down --dir "$1" >/dev/null 2>&1 || true
    "$(dirname "${BASH_SOURCE[0]}")/cassandra/cluster.sh" down --dir "$2" >/dev/null 2>&1 || true
}
