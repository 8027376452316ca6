# syntax=docker/dockerfile:1
# Mosaic's node image: `mosaic server` on debian-slim, built in a pinned Rust image.
# Build: docker build -t mosaic .      Run and configure: docs/deploy.md

# ---- builder -----------------------------------------------------------------------------
# Pinned: the toolchain the workspace is tested with (rust-version in Cargo.toml is the
# floor). Bookworm, so the binary's glibc matches the runtime image's.
FROM rust:1.95.0-slim-bookworm AS builder
WORKDIR /src

# 1. Dependencies only, from the manifests: this layer is rebuilt only when Cargo.toml or
#    Cargo.lock change, not on every source edit. Each workspace crate gets a stub source
#    (a library, and `main` where the manifest declares a binary), removed again afterwards.
COPY Cargo.toml Cargo.lock ./
COPY crates/types/Cargo.toml crates/types/
COPY crates/env/Cargo.toml crates/env/
COPY crates/lsm/Cargo.toml crates/lsm/
COPY crates/rows/Cargo.toml crates/rows/
COPY crates/erasure/Cargo.toml crates/erasure/
COPY crates/replica/Cargo.toml crates/replica/
COPY crates/hetero/Cargo.toml crates/hetero/
COPY crates/cluster/Cargo.toml crates/cluster/
COPY crates/cql/Cargo.toml crates/cql/
COPY crates/server/Cargo.toml crates/server/
COPY crates/bench/Cargo.toml crates/bench/
COPY crates/enginebench/Cargo.toml crates/enginebench/
COPY crates/sim/Cargo.toml crates/sim/
COPY crates/fuzzing/Cargo.toml crates/fuzzing/
RUN set -eu; \
    for manifest in crates/*/Cargo.toml; do \
      dir="${manifest%/Cargo.toml}"; mkdir -p "$dir/src"; : > "$dir/src/lib.rs"; \
      if grep -q '^\[\[bin\]\]' "$manifest"; then echo 'fn main() {}' > "$dir/src/main.rs"; fi; \
    done; \
    cargo build --release --locked -p mosaic-server --bin mosaic; \
    rm -rf crates/*/src target/release/.fingerprint/mosaic-* target/release/deps/*mosaic*

# 2. The sources. Touched so cargo rebuilds the workspace crates over the stubs' outputs
#    whatever the files' times in the build context.
COPY crates crates
RUN find crates -name '*.rs' -exec touch {} + \
    && cargo build --release --locked -p mosaic-server --bin mosaic \
    && install -D -m 0755 target/release/mosaic /out/mosaic

# ---- runtime -----------------------------------------------------------------------------
FROM debian:bookworm-slim
# The binary needs only glibc (libc, libm, libgcc_s), which the base image has. A fixed
# uid, so a volume's ownership means the same in every container.
RUN groupadd --system --gid 10001 mosaic \
    && useradd --system --uid 10001 --gid mosaic --home-dir /var/lib/mosaic --no-create-home mosaic \
    && mkdir -p /var/lib/mosaic /etc/mosaic \
    && chown mosaic:mosaic /var/lib/mosaic
COPY --from=builder /out/mosaic /usr/local/bin/mosaic
COPY deploy/docker/mosaic.toml /etc/mosaic/mosaic.toml
COPY deploy/docker/entrypoint.sh /usr/local/bin/mosaic-entrypoint
USER mosaic
VOLUME ["/var/lib/mosaic"]
# CQL (native protocol), internode (gossip and replication), admin HTTP (bound to the
# container's loopback unless admin_listen_address says otherwise: see docs/deploy.md).
EXPOSE 9042 7000 7199
ENTRYPOINT ["/usr/local/bin/mosaic-entrypoint"]
CMD ["server", "--config", "/etc/mosaic/mosaic.toml"]
