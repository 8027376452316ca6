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
