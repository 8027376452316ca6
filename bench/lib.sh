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

# --- An emulated disk-bound regime (issue 19; BENCHMARKS.md "DEPART in a disk-bound regime")
#
# Each node's directory on its own loop device (a sparse ext4 image), that device throttled
# in the *root* cgroup-v1 blkio group (the only place a rule also catches buffered writeback,
# which the kernel issues from the root group; fsync and O_DIRECT pay it too), and each
# node process in its own cgroup-v1 memory group whose limit bounds its RSS and its page
# cache. The limits come from these variables (set them before disk_regime_setup; empty or
# 0 means no such limit):
#   DISK_MIB_PER_S   read and write bandwidth of each node's device, MiB/s
#   DISK_IOPS        read and write I/Os per second of each node's device
#   NODE_MEMORY_MIB  memory limit of each node process (RSS + page cache), MiB
#   DISK_IMAGE_GIB   size of each (sparse) image file, default 16
# A caller sets `trap disk_regime_teardown EXIT` after stopping its nodes there too; the
# teardown stops whatever process is still in the groups it made, then unmounts, detaches,
# resets the throttle rules and removes the groups, and can run any number of times.

disk_regime_loops=() disk_regime_mounts=() disk_regime_groups=() disk_regime_images=()
disk_regime_blkio=/sys/fs/cgroup/blkio
disk_regime_memory=/sys/fs/cgroup/memory

# Whether any limit is asked for.
disk_regime_wanted() {
    [ "${DISK_MIB_PER_S:-0}" != 0 ] || [ "${DISK_IOPS:-0}" != 0 ] || [ "${NODE_MEMORY_MIB:-0}" != 0 ]
}

# At a script's start: with a limit asked for, exits unless the machine can emulate the
# regime, then sets regime=1 and records the limits in DIR/regime.txt (regime=0 without);
# sets cgroup_args to what `cluster up` needs to start each node in its memory group.
disk_regime_init() { # dir
    regime=0
    if disk_regime_wanted; then
        regime=1
        disk_regime_check
        echo "disk regime: ${DISK_MIB_PER_S:-0} MiB/s and ${DISK_IOPS:-0} IOPS per node device (0: none), ${NODE_MEMORY_MIB:-0} MiB per node (0: none)" > "$1/regime.txt"
    fi
    mapfile -t cgroup_args < <(disk_regime_cgroup_args)
}

# Exits with what is missing unless this machine can emulate the regime: root, loop
# devices, mkfs.ext4, and the cgroup-v1 blkio and memory hierarchies.
disk_regime_check() {
    local v missing=()
    for v in DISK_MIB_PER_S DISK_IOPS NODE_MEMORY_MIB DISK_IMAGE_GIB; do
        case ${!v:-0} in
            ''|*[!0-9]*) echo "$v=${!v} is not a whole number" >&2; exit 2 ;;
        esac
    done
    [ "$(id -u)" = 0 ] || missing+=("root (loop devices, mounts and cgroups need it)")
    [ -e /dev/loop-control ] || missing+=("/dev/loop-control (the loop driver)")
    command -v losetup >/dev/null || missing+=("losetup (util-linux)")
    command -v mkfs.ext4 >/dev/null || missing+=("mkfs.ext4 (e2fsprogs)")
    [ -w "$disk_regime_blkio/blkio.throttle.write_bps_device" ] \
        || missing+=("$disk_regime_blkio/blkio.throttle.* (cgroup-v1 blkio)")
    [ -w "$disk_regime_memory/cgroup.procs" ] \
        || missing+=("$disk_regime_memory (cgroup-v1 memory)")
    if [ ${#missing[@]} -gt 0 ]; then
        echo "the emulated disk-bound regime needs, and this machine lacks:" >&2
        printf '  - %s\n' "${missing[@]}" >&2
        exit 1
    fi
}

# Writes "MAJ:MIN value" to every throttle rule of the root blkio group (0 removes them).
disk_regime_throttle() { # maj:min bytes-per-s iops
    local rw
    for rw in read write; do
        echo "$1 $2" > "$disk_regime_blkio/blkio.throttle.${rw}_bps_device"
        echo "$1 $3" > "$disk_regime_blkio/blkio.throttle.${rw}_iops_device"
    done
}

# Node I's memory group (one name per script run, so concurrent runs never share one).
disk_regime_group() { # node-index
    echo "$disk_regime_memory/mosaic-bench-${DISK_REGIME_TAG:-$$}-node$1"
}

# Before the nodes start: for node I of 1..NODES, DIR/nodeI made (it must not exist, or
# be an empty directory) and, with a disk limit, a fresh ext4 file system on a loop device
# mounted there (image DIR.disks/nodeI.img) and throttled; with a memory limit, its memory
# group made (each node joins it as it starts: disk_regime_cgroup_args).
disk_regime_setup() { # dir nodes
    local dir=$1 nodes=$2 i img dev majmin group
    local bps=$(( ${DISK_MIB_PER_S:-0} << 20 )) iops=${DISK_IOPS:-0}
    mkdir -p "$dir" "$dir.disks"
    for i in $(seq 1 "$nodes"); do
        if [ -e "$dir/node$i" ] && [ -n "$(ls -A "$dir/node$i")" ]; then
            echo "$dir/node$i is not empty: the regime mounts a fresh file system there" >&2
            exit 1
        fi
        mkdir -p "$dir/node$i"
        if [ "$bps" != 0 ] || [ "$iops" != 0 ]; then
            img=$dir.disks/node$i.img
            rm -f "$img"
            truncate -s "${DISK_IMAGE_GIB:-16}G" "$img"
            disk_regime_images+=("$img")
            # Inode tables and journal written now, unthrottled: lazy initialisation would
            # write them in the background, through the throttle, during the run.
            mkfs.ext4 -q -F -m 0 -i 1048576 -E lazy_itable_init=0,lazy_journal_init=0 "$img"
            # Direct I/O to the image: the host's page cache then holds no second copy,
            # so a read the node's memory group misses really goes to the disk.
            dev=$(losetup --find --show --direct-io=on "$img")
            disk_regime_loops+=("$dev")
            mount -o noatime "$dev" "$dir/node$i"
            disk_regime_mounts+=("$dir/node$i")
            majmin=$(cat "/sys/block/$(basename "$dev")/dev")
            disk_regime_throttle "$majmin" "$bps" "$iops"
        fi
        if [ "${NODE_MEMORY_MIB:-0}" != 0 ]; then
            group=$(disk_regime_group "$i")
            [ -d "$group" ] || mkdir "$group"
            disk_regime_groups+=("$group")
            echo $(( NODE_MEMORY_MIB << 20 )) > "$group/memory.limit_in_bytes"
        fi
    done
    log "disk regime: $nodes nodes, ${DISK_MIB_PER_S:-0} MiB/s and ${DISK_IOPS:-0} IOPS per device (0: none), ${NODE_MEMORY_MIB:-0} MiB per node (0: none)"
}

# The memory group of node `{node}` as a template for `mosaic cluster up --cgroup` and
# `bench/cassandra/cluster.sh up --cgroup` (each node joins its group before it execs, so
# all it ever allocates or caches is charged there: this kernel no longer moves charges
# with a process, `memory.move_charge_at_immigrate` is refused); nothing without a memory
# limit.
disk_regime_cgroup_args() {
    [ "${NODE_MEMORY_MIB:-0}" != 0 ] || return 0
    echo "--cgroup"
    echo "$disk_regime_memory/mosaic-bench-${DISK_REGIME_TAG:-$$}-node{node}"
}

# Exits unless process PID runs in node I's memory group (when there is one).
disk_regime_verify() { # pid node-index
    [ "${NODE_MEMORY_MIB:-0}" != 0 ] || return 0
    local want
    want=/$(basename "$(disk_regime_group "$2")")
    if ! grep -q ":memory:$want\$" "/proc/$1/cgroup"; then
        echo "pid $1 (node $2) is not in memory group $want: $(grep ':memory:' "/proc/$1/cgroup")" >&2
        exit 1
    fi
}

# Node I's memory group and device as they stand: peak and current usage, limit hits,
# cache and RSS (bytes), one line per node (for a run's env or results).
disk_regime_report() { # nodes
    local i group
    [ "${NODE_MEMORY_MIB:-0}" != 0 ] || return 0
    for i in $(seq 1 "$1"); do
        group=$(disk_regime_group "$i")
        [ -d "$group" ] || continue
        echo "node$i: memory peak $(cat "$group/memory.max_usage_in_bytes") now $(cat "$group/memory.usage_in_bytes") limit hits $(cat "$group/memory.failcnt") $(grep -E '^(cache|rss) ' "$group/memory.stat" | paste -sd' ')"
    done
}

# Undoes disk_regime_setup; never fails (for an EXIT trap). Whatever still runs in a group
# it made is stopped first (SIGTERM, SIGKILL after 60 s): only the nodes started into them
# are there, and a mounted file system cannot go while they run.
disk_regime_teardown() {
    local group pid dev majmin m i _
    for group in ${disk_regime_groups[@]+"${disk_regime_groups[@]}"}; do
        [ -f "$group/cgroup.procs" ] || continue
        for pid in $(cat "$group/cgroup.procs"); do kill -TERM "$pid" 2>/dev/null || true; done
        for _ in $(seq 1 600); do
            [ -z "$(cat "$group/cgroup.procs" 2>/dev/null)" ] && break
            sleep 0.1
        done
        for pid in $(cat "$group/cgroup.procs" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
    done
    for m in ${disk_regime_mounts[@]+"${disk_regime_mounts[@]}"}; do
        for i in 1 2 3 4 5 6 7 8 9 10; do
            umount "$m" 2>/dev/null && break
            [ "$i" = 10 ] && { echo "could not unmount $m; lazily detaching it" >&2; umount -l "$m" || true; }
            sleep 0.5
        done
    done
    for dev in ${disk_regime_loops[@]+"${disk_regime_loops[@]}"}; do
        majmin=$(cat "/sys/block/$(basename "$dev")/dev" 2>/dev/null) || majmin=
        [ -z "$majmin" ] || disk_regime_throttle "$majmin" 0 0 2>/dev/null || true
        losetup -d "$dev" 2>/dev/null || echo "could not detach $dev" >&2
    done
    for group in ${disk_regime_groups[@]+"${disk_regime_groups[@]}"}; do
        [ ! -d "$group" ] || rmdir "$group" 2>/dev/null || echo "could not remove $group" >&2
    done
    rm -f ${disk_regime_images[@]+"${disk_regime_images[@]}"}
    disk_regime_loops=() disk_regime_mounts=() disk_regime_groups=() disk_regime_images=()
}
