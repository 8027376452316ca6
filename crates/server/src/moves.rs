//! A node joining a running cluster (bootstrap) from the server's side: choosing its
//! tokens, remembering that it is joining and which ranges it already streamed (so a
//! crash resumes the join rather than leaving a node that owns ranges it never received),
//! and running the join before the node serves CQL. The cluster side is
//! `mosaic_cluster::node` (`Node::bootstrap`, `Node::decommission`).
//!
//! `bootstrap.json` in the data directory exists from the moment the node chose its
//! tokens until the join completed; it lists the ranges (table, left, right) already
//! stored. A node starting with it announces `Joining` and runs the join again, skipping
//! those ranges — unless the join was completing (everything streamed and re-homed, the
//! node announcing `Normal`): then it starts normal with its tokens and only finishes.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use mosaic_cluster::message::{EndpointState, NodeStatus, RingStatus};
use mosaic_cluster::node::{MoveError, StreamedRange};
use mosaic_cluster::{Endpoint, Node, TableKey};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::config::Config;
use crate::durable::{write_atomic, NodeIdentity};
use crate::local::LocalCoordinator;

/// The file marking a join in progress.
pub const BOOTSTRAP_FILE: &str = "bootstrap.json";

/// The file marking a data directory whose node was decommissioned: it does not start
/// again (its tokens belong to others now; as Cassandra, which refuses to rejoin).
pub const DECOMMISSIONED_FILE: &str = "decommissioned";

/// Refuses to start a node that was decommissioned.
pub fn refuse_decommissioned(data_dir: &Path) -> Result<()> {
    if data_dir.join(DECOMMISSIONED_FILE).exists() {
        anyhow::bail!(
            "this node was decommissioned and left the ring; it does not rejoin with its old \
             data. To add this machine again, empty {} and start it as a new node",
            data_dir.display()
        );
    }
    Ok(())
}

/// Pause before a join waiting for another node's move, or a failed one, tries again.
const RETRY: Duration = Duration::from_secs(2);

/// A join in progress, as persisted.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Joining {
    /// Ranges already stored: table id (hex), left token (exclusive), right token.
    streamed: Vec<(String, i64, i64)>,
    /// The dead node this one replaces (`replace_address`), if it does.
    #[serde(default)]
    replacing: Option<std::net::SocketAddr>,
    /// Everything is streamed and re-homed: the node announces (or announced) `Normal`.
    /// Restarted now, it starts normal (a replacement then announces the node it
    /// replaced `Left` again) instead of joining anew.
    #[serde(default)]
    completing: bool,
}

fn table_hex(table: TableKey) -> String {
    table.0.iter().map(|b| format!("{b:02x}")).collect()
}

fn table_of_hex(hex: &str) -> Option<TableKey> {
    let mut id = [0u8; 16];
    if hex.len() != 32 {
        return None;
    }
    for (i, byte) in id.iter_mut().enumerate() {
        *byte = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(mosaic_types::TableId(id))
}

/// Whether `data_dir` holds a join in progress.
pub fn joining(data_dir: &Path) -> bool {
    data_dir.join(BOOTSTRAP_FILE).exists()
}

/// Chooses this new node's tokens to join `peers` (what the seeds told it), when it
/// should bootstrap: `auto_bootstrap` on, not its own seed, no `initial_token`, and
/// nodes of the cluster already owning tokens. Saves its identity and marks the join;
/// whether it will bootstrap.
pub fn plan(config: &Config, peers: &[EndpointState]) -> Result<bool> {
    let me = config.storage_endpoint();
    if let Some(dead) = config.replace_endpoint()? {
        return plan_replace(config, peers, dead).map(|()| true);
    }
    let own_seed = config.seed_endpoints()?.contains(&me);
    let owners: Vec<&EndpointState> = peers
        .iter()
        .filter(|s| s.endpoint != me && s.app.ring_status.owns_now() && !s.app.tokens.is_empty())
        .collect();
    if !config.cluster.auto_bootstrap
        || own_seed
        || !config.initial_token.is_empty()
        || owners.is_empty()
    {
        return Ok(false);
    }
    let same_dc: Vec<(Endpoint, Vec<i64>)> = owners
        .iter()
        .filter(|s| s.app.data_center == config.data_center)
        .map(|s| (s.endpoint, s.app.tokens.clone()))
        .collect();
    let taken: std::collections::HashSet<i64> = owners
        .iter()
        .flat_map(|s| s.app.tokens.iter().copied())
        .collect();
    let tokens: Vec<i64> = if same_dc.is_empty() {
        // The first node of its datacenter: random tokens (as a new cluster's).
        NodeIdentity::generate(config.num_tokens).tokens
    } else {
        mosaic_cluster::tokens::allocate(&same_dc, me, config.num_tokens as usize)
    }
    .into_iter()
    .filter(|t| !taken.contains(t))
    .collect();
    start_join(config, NodeIdentity::with_tokens(tokens), None)?;
    tracing::info!(
        target: "mosaic::bootstrap",
        "joining a running cluster: balanced tokens chosen; streaming before serving"
    );
    Ok(true)
}

/// The state of the node to replace at `dead`, refused when the cluster knows no node
/// owning tokens there.
fn replaceable(
    dead: std::net::SocketAddr,
    state: Option<&EndpointState>,
) -> Result<&EndpointState> {
    let Some(state) = state else {
        anyhow::bail!("replace_address {dead}: the cluster knows no node at that address");
    };
    if !state.app.ring_status.owns_now() || state.app.tokens.is_empty() {
        anyhow::bail!(
            "replace_address {dead}: that node owns no tokens ({:?}); nothing to replace",
            state.app.ring_status
        );
    }
    Ok(state)
}

/// Plans replacing the dead node `dead` (`replace_address`) at another address: this new
/// node takes its tokens (with a host id of its own). Refused when the cluster knows no
/// node owning tokens at that address.
fn plan_replace(
    config: &Config,
    peers: &[EndpointState],
    dead: std::net::SocketAddr,
) -> Result<()> {
    let state = replaceable(dead, peers.iter().find(|s| s.endpoint == dead))?;
    start_join(
        config,
        NodeIdentity::with_tokens(state.app.tokens.clone()),
        Some(dead),
    )?;
    tracing::info!(
        target: "mosaic::bootstrap",
        replacing = %dead,
        tokens = state.app.tokens.len(),
        "replacing a dead node: its tokens taken; streaming its ranges before serving"
    );
    Ok(())
}

/// Plans replacing the dead node at this node's own address (`replace_address` naming
/// itself), from `samples`, the states of that address the seeds gave in shadow rounds a
/// few gossip intervals apart: this node takes the dead node's identity (host id, tokens,
/// location) and starts hibernating (`start_state`). Refused when the cluster knows no node
/// owning tokens at the address, or when its heartbeat moved from each sample to the next
/// (a node answers there: only a dead node can be replaced).
pub fn plan_replace_own(config: &Config, samples: &[Option<EndpointState>]) -> Result<()> {
    let me = config.storage_endpoint();
    // The newest state a seed gave (a round no seed answered gives none).
    let last = samples.iter().rev().find_map(Option::as_ref);
    let state = replaceable(me, last)?;
    let version = |s: &Option<EndpointState>| s.as_ref().map(EndpointState::version);
    let beats = samples.len() > 1
        && samples.windows(2).all(|w| match w {
            [a, b] => version(a) < version(b),
            _ => false,
        });
    if beats {
        anyhow::bail!(
            "replace_address {me}: the node at that address is alive (its heartbeat moves); \
             only a dead node can be replaced"
        );
    }
    let identity = NodeIdentity {
        host_id: state.app.host_id,
        tokens: state.app.tokens.clone(),
        data_center: Some(state.app.data_center.clone()),
        rack: Some(state.app.rack.clone()),
    };
    start_join(config, identity, Some(me))?;
    tracing::warn!(
        target: "mosaic::bootstrap",
        tokens = state.app.tokens.len(),
        "replacing the dead node at this node's own address: its identity taken; streaming \
         its ranges before serving. Writes are not sent to this node meanwhile (the others \
         hint them and replay them once it is normal)"
    );
    Ok(())
}

/// Saves a new node's `identity`, after marking its join.
fn start_join(
    config: &Config,
    identity: NodeIdentity,
    replacing: Option<std::net::SocketAddr>,
) -> Result<()> {
    std::fs::create_dir_all(&config.data_dir)
        .with_context(|| format!("creating {}", config.data_dir.display()))?;
    // The join marker first: a crash between the two leaves a node that joins with
    // tokens chosen afresh, never one owning tokens it never streamed for.
    let joining = Joining {
        replacing,
        ..Joining::default()
    };
    save(&config.data_dir, &joining)?;
    identity
        .save(&config.data_dir)
        .context("saving the new node's identity")
}

fn save(data_dir: &Path, joining: &Joining) -> Result<()> {
    let path = data_dir.join(BOOTSTRAP_FILE);
    let bytes = serde_json::to_vec(joining).context("encoding the join's progress")?;
    write_atomic(&path, &bytes).with_context(|| format!("writing {}", path.display()))
}

fn load(data_dir: &Path) -> Joining {
    let path = data_dir.join(BOOTSTRAP_FILE);
    match std::fs::read(&path).map(|b| serde_json::from_slice::<Joining>(&b)) {
        Ok(Ok(j)) => j,
        Ok(Err(e)) => {
            tracing::warn!(target: "mosaic::bootstrap", path = %path.display(), error = %e,
                "the join's progress does not parse; streaming every range again");
            Joining::default()
        }
        Err(_) => Joining::default(),
    }
}

/// The ring status a node starts in, the tokens it gossips and its node status: joining
/// without tokens while `bootstrap.json` exists (it announces them once it has the schema,
/// so no write reaches it for a table it does not know yet) — or, replacing the dead node
/// at its own address `me`, normal with `tokens` but hibernating (the others see it down
/// until it streamed) — else normal with `tokens`.
pub fn start_state(
    data_dir: &Path,
    me: std::net::SocketAddr,
    tokens: Vec<i64>,
) -> (RingStatus, Vec<i64>, NodeStatus) {
    let progress = joining(data_dir).then(|| load(data_dir));
    match progress {
        Some(p) if !p.completing && p.replacing == Some(me) => {
            (RingStatus::Normal, tokens, NodeStatus::Hibernate)
        }
        Some(p) if !p.completing => (RingStatus::Joining, Vec::new(), NodeStatus::Normal),
        _ => (RingStatus::Normal, tokens, NodeStatus::Normal),
    }
}

/// Runs this node's join to completion (see the module doc): waits for the schema and
/// for any other node's move, streams, and removes the marker. Failed attempts are
/// logged and retried, resuming from the ranges stored; a replacement that cannot be
/// (the node to replace is alive, or owns other tokens) fails.
pub async fn run(node: &Node, local: &LocalCoordinator, data_dir: PathBuf) -> Result<()> {
    let progress = Arc::new(Mutex::new(load(&data_dir)));
    let tokens: Vec<i64> = local.local_node().tokens.iter().map(|t| t.0).collect();
    let completed = |data_dir: &Path| {
        let path = data_dir.join(BOOTSTRAP_FILE);
        if let Err(e) = std::fs::remove_file(&path) {
            tracing::warn!(target: "mosaic::bootstrap", path = %path.display(), error = %e,
                "could not remove the join marker");
        }
    };
    let (completing, replacing) = {
        let p = progress.lock();
        (p.completing, p.replacing)
    };
    if completing {
        // Restarted after the join streamed and re-homed everything: normal already.
        // (A node that replaced itself at its own address has nothing more to announce.)
        if let Some(dead) = replacing.filter(|dead| *dead != node.endpoint()) {
            while !node.hears_ring() {
                tokio::time::sleep(RETRY).await;
            }
            node.finish_replace(dead).await;
        }
        completed(&data_dir);
        tracing::info!(target: "mosaic::bootstrap", "the join had completed before the restart");
        return Ok(());
    }
    loop {
        // The schema comes from the live nodes: hear from one first (agreement with none
        // would be had at once, with no tables to stream).
        if !node.hears_ring() || !node.await_schema_agreement(10_000).await {
            tracing::info!(target: "mosaic::bootstrap", "waiting for the schema before joining");
            tokio::time::sleep(RETRY).await;
            continue;
        }
        if let Some(other) = node.moving_peer() {
            tracing::info!(target: "mosaic::bootstrap", peer = %other,
                "another node is joining or leaving; waiting to join");
            tokio::time::sleep(RETRY).await;
            continue;
        }
        let tables: Vec<TableKey> = local.current_catalog().tables().map(|t| t.id).collect();
        let done: Vec<StreamedRange> = progress
            .lock()
            .streamed
            .iter()
            .filter_map(|(t, l, r)| Some((table_of_hex(t)?, *l, *r)))
            .collect();
        let record = {
            let progress = progress.clone();
            let data_dir = data_dir.clone();
            move |(table, left, right): StreamedRange| {
                let mut p = progress.lock();
                p.streamed.push((table_hex(table), left, right));
                if let Err(e) = save(&data_dir, &p) {
                    tracing::warn!(target: "mosaic::bootstrap", error = %e,
                        "could not record a streamed range (a restart streams it again)");
                }
            }
        };
        let completing = {
            let progress = progress.clone();
            let data_dir = data_dir.clone();
            move || {
                let mut p = progress.lock();
                p.completing = true;
                if let Err(e) = save(&data_dir, &p) {
                    tracing::warn!(target: "mosaic::bootstrap", error = %e,
                        "could not record that the join is completing (a restart joins again)");
                }
            }
        };
        match node
            .bootstrap(
                tokens.clone(),
                replacing,
                &tables,
                &done,
                &record,
                &completing,
            )
            .await
        {
            Ok(()) => {
                completed(&data_dir);
                return Ok(());
            }
            // The replaced node is alive, or not one to replace: retrying cannot help.
            Err(e @ MoveError::Replace(..)) => return Err(e.into()),
            Err(e) => {
                tracing::warn!(target: "mosaic::bootstrap", error = %e, "joining failed; retrying");
                tokio::time::sleep(RETRY).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_ids_round_trip_through_hex() {
        let t = mosaic_types::TableId([0xa5; 16]);
        assert_eq!(table_of_hex(&table_hex(t)), Some(t));
        assert_eq!(table_of_hex("zz"), None);
        assert_eq!(table_of_hex(&"g".repeat(32)), None);
    }

    #[test]
    fn progress_survives_a_restart_and_a_damaged_file_restarts_the_streams() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!joining(dir.path()));
        let p = Joining {
            streamed: vec![(table_hex(mosaic_types::TableId([1; 16])), -5, 7)],
            replacing: Some("127.0.0.3:7000".parse().unwrap()),
            completing: false,
        };
        // A progress file without the node it replaces (written before replacements
        // existed) is a plain join's.
        std::fs::write(dir.path().join(BOOTSTRAP_FILE), br#"{"streamed":[]}"#).unwrap();
        assert_eq!(load(dir.path()), Joining::default());
        save(dir.path(), &p).unwrap();
        assert!(joining(dir.path()));
        assert_eq!(
            start_state(dir.path(), "127.0.0.5:7000".parse().unwrap(), vec![1]),
            (RingStatus::Joining, vec![], NodeStatus::Normal)
        );
        assert_eq!(load(dir.path()), p);
        std::fs::write(dir.path().join(BOOTSTRAP_FILE), b"{not json").unwrap();
        assert_eq!(load(dir.path()), Joining::default());
    }

    #[test]
    fn a_join_restarted_while_completing_starts_normal_with_its_tokens() {
        let dir = tempfile::tempdir().unwrap();
        let mut p = Joining {
            streamed: vec![(table_hex(mosaic_types::TableId([1; 16])), -5, 7)],
            replacing: None,
            completing: false,
        };
        save(dir.path(), &p).unwrap();
        let me = "127.0.0.5:7000".parse().unwrap();
        assert_eq!(
            start_state(dir.path(), me, vec![4, 9]).0,
            RingStatus::Joining
        );
        p.completing = true;
        save(dir.path(), &p).unwrap();
        assert_eq!(
            start_state(dir.path(), me, vec![4, 9]),
            (RingStatus::Normal, vec![4, 9], NodeStatus::Normal)
        );
        assert_eq!(load(dir.path()), p);
    }

    fn state_at(config: &Config, heartbeat: u64, ring_status: RingStatus) -> EndpointState {
        EndpointState {
            endpoint: config.storage_endpoint(),
            generation: 7,
            heartbeat,
            app: mosaic_cluster::message::AppState {
                host_id: mosaic_types::HostId([3; 16]),
                tokens: vec![-40, 12],
                rpc_address: config.rpc_address(),
                native_port: 9042,
                admin_port: 0,
                data_center: "dc2".to_owned(),
                rack: "r9".to_owned(),
                release_version: String::new(),
                schema_version: [0; 16],
                status: NodeStatus::Normal,
                ring_status,
                replacing: None,
                load_bytes: 0,
            },
        }
    }

    #[test]
    fn a_node_replacing_itself_takes_the_dead_nodes_identity_and_starts_hibernating() {
        let dir = tempfile::tempdir().unwrap();
        let config = Config {
            data_dir: dir.path().to_path_buf(),
            ..Config::default()
        };
        let me = config.storage_endpoint();
        let dead = |hb| Some(state_at(&config, hb, RingStatus::Normal));
        // A heartbeat that moves at every sample: a node answers at the address.
        let alive = plan_replace_own(&config, &[dead(4), dead(6), dead(9)]).unwrap_err();
        assert!(alive.to_string().contains("only a dead node"), "{alive}");
        // No node there, or one that owns nothing.
        assert!(plan_replace_own(&config, &[None, None]).is_err());
        let left = Some(state_at(&config, 4, RingStatus::Left));
        let err = plan_replace_own(&config, &[left.clone(), left]).unwrap_err();
        assert!(err.to_string().contains("owns no tokens"), "{err}");
        assert!(!joining(dir.path()));
        // Dead (a seed that had not heard its last beat yet moves once; a round no seed
        // answered gives nothing): its identity taken, hibernating until streamed.
        plan_replace_own(&config, &[dead(4), dead(5), None]).unwrap();
        let identity = NodeIdentity::load_or_create(dir.path(), 1).unwrap();
        assert_eq!(identity.host_id, mosaic_types::HostId([3; 16]));
        assert_eq!(identity.tokens, vec![-40, 12]);
        assert_eq!(identity.rack.as_deref(), Some("r9"));
        assert_eq!(load(dir.path()).replacing, Some(me));
        assert_eq!(
            start_state(dir.path(), me, vec![-40, 12]),
            (RingStatus::Normal, vec![-40, 12], NodeStatus::Hibernate)
        );
        // Once everything streamed, a restart is normal.
        let mut p = load(dir.path());
        p.completing = true;
        save(dir.path(), &p).unwrap();
        assert_eq!(
            start_state(dir.path(), me, vec![-40, 12]).2,
            NodeStatus::Normal
        );
    }
}
