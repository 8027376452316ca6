//! What a deployment gives a node at start rather than in its config file: addresses from
//! the environment, and seeds named by DNS.
//!
//! A container orchestrator hands every replica of a node the same config file (a
//! Kubernetes ConfigMap, a Docker image's file) but a different address, known only once
//! the container runs; and it gives peers stable names (a StatefulSet's
//! `mosaic-0.mosaic-peers`) but addresses that change when a pod moves. So `mosaic server`
//! takes, over the file:
//!
//! | variable | key | value |
//! |---|---|---|
//! | `MOSAIC_LISTEN_ADDRESS` | `listen_address` | an IP address (a pod's `status.podIP`) |
//! | `MOSAIC_BROADCAST_ADDRESS` | `broadcast_address` | an IP address |
//! | `MOSAIC_SEEDS` | `seeds` | comma-separated seeds |
//!
//! and a seed may be a DNS name (`"name"` on this node's storage port, or `"name:port"`),
//! resolved once at start ([`resolve_seeds`]) to every address it names. Only `mosaic
//! server` reads the environment (not `mosaic cluster up`, which writes configs), and an
//! empty variable counts as unset.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::config::Config;

/// The environment variables [`apply_env`] reads, and the keys they set.
pub const ENV_OVERRIDES: [(&str, &str); 3] = [
    ("MOSAIC_LISTEN_ADDRESS", "listen_address"),
    ("MOSAIC_BROADCAST_ADDRESS", "broadcast_address"),
    ("MOSAIC_SEEDS", "seeds"),
];

/// How long start waits for at least one seed name to resolve (a StatefulSet's first pod
/// gets its DNS record a moment after it starts).
const SEED_RESOLVE_WAIT: Duration = Duration::from_secs(60);
/// How long start waits for the other seed names once one resolved.
const SEED_PARTIAL_WAIT: Duration = Duration::from_secs(5);
/// Pause between two attempts to resolve the seed names.
const SEED_RESOLVE_RETRY: Duration = Duration::from_secs(1);

/// Sets `config`'s keys from the variables of [`ENV_OVERRIDES`] that `env` has (not yet
/// validated: the caller validates the result); the names of those applied.
pub fn apply_env(config: &mut Config, env: impl Fn(&str) -> Option<String>) -> Result<Vec<String>> {
    let mut applied = Vec::new();
    for (var, key) in ENV_OVERRIDES {
        let Some(value) = env(var)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
        else {
            continue;
        };
        let ip = || -> Result<IpAddr> {
            value
                .parse()
                .with_context(|| format!("{var}={value:?} is not an IP address"))
        };
        match key {
            "listen_address" => config.listen_address = ip()?,
            "broadcast_address" => config.broadcast_address = Some(ip()?),
            _ => {
                config.seeds = value
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect()
            }
        }
        applied.push(format!("{var} ({key})"));
    }
    Ok(applied)
}

/// A seed as written: an address, or a name to resolve on a port.
#[derive(Debug, PartialEq, Eq)]
pub enum Seed<'a> {
    Address(SocketAddr),
    Name(&'a str, u16),
}

/// Reads a seed: `ip`, `ip:port`, `[v6]:port`, `name` or `name:port` (`port`: the storage
/// port when absent).
pub fn parse_seed(seed: &str, storage_port: u16) -> Result<Seed<'_>> {
    if let Ok(addr) = seed.parse::<SocketAddr>() {
        return Ok(Seed::Address(addr));
    }
    if let Ok(ip) = seed.parse::<IpAddr>() {
        return Ok(Seed::Address(SocketAddr::new(ip, storage_port)));
    }
    let (name, port) = match seed.rsplit_once(':') {
        Some((name, port)) => match port.parse::<u16>() {
            Ok(port) if port != 0 => (name, port),
            _ => bail!("seed {seed:?}: {port:?} is not a port"),
        },
        None => (seed, storage_port),
    };
    let is_name = !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        });
    if !is_name {
        bail!("seed {seed:?} is neither an IP address, IP:port, a host name nor host:port");
    }
    Ok(Seed::Name(name, port))
}

/// Replaces the seed names of `config` with the addresses they resolve to (every one, as
/// `ip:port`). Names that do not resolve are retried every second: once at least one seed
/// is known, for [`SEED_PARTIAL_WAIT`] more (then they are left out, with a warning: a
/// pod not started yet); with none known, for up to [`SEED_RESOLVE_WAIT`] (then start
/// fails). No names: no lookups.
pub async fn resolve_seeds(config: &mut Config) -> Result<()> {
    let storage_port = config.storage_port;
    let parsed = config
        .seeds
        .iter()
        .map(|s| parse_seed(s, storage_port))
        .collect::<Result<Vec<_>>>()?;
    if parsed.iter().all(|s| matches!(s, Seed::Address(_))) {
        return Ok(());
    }
    let started = tokio::time::Instant::now();
    loop {
        let mut resolved = Vec::new();
        let mut failed = Vec::new();
        for seed in &parsed {
            match seed {
                Seed::Address(addr) => resolved.push(*addr),
                Seed::Name(name, port) => match tokio::net::lookup_host((*name, *port)).await {
                    Ok(addrs) => {
                        let addrs: Vec<SocketAddr> = addrs.collect();
                        tracing::info!(target: "mosaic", seed = %name, addresses = ?addrs, "seed resolved");
                        resolved.extend(addrs);
                    }
                    Err(e) => failed.push(format!("{name}: {e}")),
                },
            }
        }
        resolved.sort();
        resolved.dedup();
        let waited = started.elapsed();
        let enough = failed.is_empty() || (!resolved.is_empty() && waited >= SEED_PARTIAL_WAIT);
        if enough {
            if !failed.is_empty() {
                tracing::warn!(target: "mosaic", unresolved = ?failed, "seeds left out: their names do not resolve");
            }
            config.seeds = resolved.iter().map(SocketAddr::to_string).collect();
            return Ok(());
        }
        if waited >= SEED_RESOLVE_WAIT {
            bail!(
                "no seed resolves after {} s: {}",
                SEED_RESOLVE_WAIT.as_secs(),
                failed.join("; ")
            );
        }
        tokio::time::sleep(SEED_RESOLVE_RETRY).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |var| {
            pairs
                .iter()
                .find(|(k, _)| *k == var)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn the_environment_sets_addresses_and_seeds_over_the_file() {
        let mut config = Config::parse("listen_address = \"127.0.0.9\"\n").unwrap();
        let applied = apply_env(
            &mut config,
            env(&[
                ("MOSAIC_LISTEN_ADDRESS", " 10.1.2.3 "),
                ("MOSAIC_BROADCAST_ADDRESS", ""),
                (
                    "MOSAIC_SEEDS",
                    "mosaic-0.mosaic-peers, 10.1.2.4:7001,,mosaic-1.mosaic-peers:7000",
                ),
                ("MOSAIC_RACK", "ignored"),
            ]),
        )
        .unwrap();
        assert_eq!(
            config.listen_address,
            IpAddr::from([10, 1, 2, 3]),
            "the environment wins over the file"
        );
        assert_eq!(config.broadcast_address, None, "empty means unset");
        assert_eq!(
            config.seeds,
            [
                "mosaic-0.mosaic-peers",
                "10.1.2.4:7001",
                "mosaic-1.mosaic-peers:7000"
            ]
        );
        assert_eq!(
            applied,
            [
                "MOSAIC_LISTEN_ADDRESS (listen_address)",
                "MOSAIC_SEEDS (seeds)"
            ]
        );
        config.validate().unwrap();
        let mut config = Config::default();
        assert!(apply_env(&mut config, env(&[("MOSAIC_BROADCAST_ADDRESS", "pod")])).is_err());
        assert_eq!(
            apply_env(&mut config, env(&[])).unwrap(),
            Vec::<String>::new()
        );
        assert_eq!(config, Config::default(), "nothing set, nothing changed");
    }

    #[test]
    fn a_config_file_loads_with_the_environment_applied_before_validation() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mosaic.toml");
        // A wildcard without a broadcast address is refused; the environment gives one.
        std::fs::write(&path, "listen_address = \"0.0.0.0\"\n").unwrap();
        assert!(Config::load(&path).is_err());
        let config =
            Config::load_with_env(&path, env(&[("MOSAIC_BROADCAST_ADDRESS", "10.0.0.7")])).unwrap();
        assert_eq!(config.rpc_address(), IpAddr::from([10, 0, 0, 7]));
        let e = Config::load_with_env(&path, env(&[("MOSAIC_SEEDS", "a b")])).unwrap_err();
        assert!(format!("{e:#}").contains("MOSAIC_SEEDS"), "{e:#}");
    }

    #[test]
    fn seeds_are_addresses_or_host_names_with_optional_ports() {
        let addr = |s: &str| Seed::Address(s.parse().unwrap());
        assert_eq!(parse_seed("10.0.0.1", 7000).unwrap(), addr("10.0.0.1:7000"));
        assert_eq!(
            parse_seed("10.0.0.1:7001", 7000).unwrap(),
            addr("10.0.0.1:7001")
        );
        assert_eq!(parse_seed("fd00::1", 7000).unwrap(), addr("[fd00::1]:7000"));
        assert_eq!(
            parse_seed("[fd00::1]:7001", 7000).unwrap(),
            addr("[fd00::1]:7001")
        );
        assert_eq!(
            parse_seed("mosaic-0.mosaic-peers.default.svc.cluster.local", 7000).unwrap(),
            Seed::Name("mosaic-0.mosaic-peers.default.svc.cluster.local", 7000)
        );
        assert_eq!(
            parse_seed("seed-1:7100", 7000).unwrap(),
            Seed::Name("seed-1", 7100)
        );
        for bad in [
            "",
            "a b",
            "host:",
            "host:0",
            "host:port",
            "-host",
            "a..b",
            "[fd00::1]",
        ] {
            assert!(parse_seed(bad, 7000).is_err(), "{bad:?}");
        }
    }

    #[tokio::test]
    async fn seed_names_resolve_to_every_address_at_start() {
        let mut config = Config {
            seeds: vec!["localhost:7010".to_owned(), "10.0.0.1".to_owned()],
            ..Config::default()
        };
        config.validate().unwrap();
        assert!(config.seed_endpoints().is_err(), "a name is resolved first");
        resolve_seeds(&mut config).await.unwrap();
        let seeds = config.seed_endpoints().unwrap();
        assert!(
            seeds.contains(&"127.0.0.1:7010".parse().unwrap()),
            "{seeds:?}"
        );
        assert!(
            seeds.contains(&"10.0.0.1:7000".parse().unwrap()),
            "{seeds:?}"
        );
        // Addresses only: left as written.
        let mut config = Config {
            seeds: vec!["10.0.0.2:7001".to_owned()],
            ..Config::default()
        };
        resolve_seeds(&mut config).await.unwrap();
        assert_eq!(config.seeds, ["10.0.0.2:7001"]);
    }

    /// The `mosaic.toml` of the example ConfigMap: the block under `mosaic.toml: |`.
    fn configmap_toml(yaml: &str) -> String {
        let (_, after) = yaml.split_once("  mosaic.toml: |\n").unwrap();
        after
            .lines()
            .take_while(|l| l.is_empty() || l.starts_with("    "))
            .map(|l| l.get(4..).unwrap_or(""))
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn the_image_and_kubernetes_configs_are_valid_with_their_environment() {
        for (what, text) in [
            (
                "deploy/docker/mosaic.toml",
                include_str!("../../../deploy/docker/mosaic.toml").to_owned(),
            ),
            (
                "deploy/kubernetes/mosaic.yaml",
                configmap_toml(include_str!("../../../deploy/kubernetes/mosaic.yaml")),
            ),
        ] {
            let mut config = Config::from_toml(&text).unwrap_or_else(|e| panic!("{what}: {e}"));
            // What the entrypoint or the pod spec sets.
            apply_env(&mut config, env(&[("MOSAIC_LISTEN_ADDRESS", "10.244.1.7")])).unwrap();
            config
                .validate()
                .unwrap_or_else(|e| panic!("{what}: {e:#}"));
            assert_eq!(
                config.rpc_address(),
                IpAddr::from([10, 244, 1, 7]),
                "{what}"
            );
            assert_eq!(
                (config.native_port, config.storage_port, config.admin_port),
                (9042, 7000, 7199),
                "{what}: the ports the Dockerfile exposes"
            );
            assert_eq!(
                config.data_dir,
                std::path::Path::new("/var/lib/mosaic"),
                "{what}"
            );
            // The admin port stays on the pod's loopback, where the liveness probe asks.
            assert_eq!(
                config.admin_address(),
                Some(SocketAddr::from(([127, 0, 0, 1], 7199))),
                "{what}"
            );
        }
        let k8s = configmap_toml(include_str!("../../../deploy/kubernetes/mosaic.yaml"));
        let config = Config::from_toml(&k8s).unwrap();
        assert_eq!(
            config.seeds,
            ["mosaic-0.mosaic-peers", "mosaic-1.mosaic-peers"],
            "the StatefulSet's first pods, by their headless Service names"
        );
    }

    #[test]
    fn the_dockerfile_copies_every_crate_manifest_for_its_dependency_layer() {
        let dockerfile = include_str!("../../../Dockerfile");
        let mut copied: Vec<&str> = dockerfile
            .lines()
            .filter_map(|l| l.strip_prefix("COPY crates/")?.split_once("/Cargo.toml "))
            .map(|(name, _)| name)
            .collect();
        copied.sort_unstable();
        let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut members: Vec<String> = std::fs::read_dir(&crates)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.join("Cargo.toml").is_file())
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        members.sort_unstable();
        assert_eq!(
            copied, members,
            "the Dockerfile's manifest COPY lines must name every crate (a missing one fails \
             the image build; an extra one too)"
        );
    }
}
